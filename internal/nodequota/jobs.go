package nodequota

import (
	"net/url"
	"strconv"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubebyon/kubebyon/internal/clusters"
)

// WebhookName names the ValidatingWebhookConfiguration (and its
// one webhook) that the node quota puts in a virtual cluster.
const (
	WebhookName = "kubebyon-node-quota"
	webhookFQDN = "node-quota.kubebyon.io"
	WebhookPath = "/webhooks/node-quota/"
)

// WebhookURL is where a cluster's apiserver sends its Node
// admission reviews. The key is the last path segment: the apiserver
// refuses webhook URLs with a query, and the request log redacts it.
func WebhookURL(baseURL string, clusterID int64, key string) string {
	return baseURL + WebhookPath + strconv.FormatInt(clusterID, 10) + "/" + url.PathEscape(key)
}

// SyncInterval is how often the webhook configurations of the
// ready clusters with the quota on are written again, in case someone
// deleted or changed one, or a control plane came back without it.
const SyncInterval = 10 * time.Minute

// SyncArgs asks for (worked by jobs.NodeQuotaSyncWorker) a cluster's node quota webhook to match its
// switch: present with the current URL when enabled, absent otherwise.
//
// The job is not unique when the switch or the cluster's becoming ready
// asks for it: River's uniqueness always covers running jobs, so a switch
// flipped while a sync runs (which may have read the switch already)
// would be dropped as a duplicate. Only the periodic re-sync is unique
// (ResyncOpts), as it only repeats what the last one did.
type SyncArgs struct {
	ClusterID int64 `json:"cluster_id"`
}

// Kind implements river.JobArgs.
func (SyncArgs) Kind() string { return "node_quota_sync" }

// InsertOpts implements river.JobArgsWithInsertOpts.
func (SyncArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: clusters.Queue, MaxAttempts: 10}
}

// ResyncOpts make the periodic re-sync of a cluster unique while
// one has not finished (pending, available, scheduled, running or waiting
// for a retry), so that an unreachable cluster does not pile them up.
// Completed jobs are left out of the states, which River allows (it
// requires only the first four): they would block the next period's until
// River's cleaner deleted them. Fewer attempts than a switch's, as the
// next period tries again anyway.
func ResyncOpts() *river.InsertOpts {
	return &river.InsertOpts{MaxAttempts: 3, UniqueOpts: river.UniqueOpts{
		ByArgs: true,
		ByState: []rivertype.JobState{
			rivertype.JobStateAvailable, rivertype.JobStatePending, rivertype.JobStateRunning,
			rivertype.JobStateRetryable, rivertype.JobStateScheduled,
		},
	}}
}

// WebhookConfiguration is the webhook that calls webhookURL: every Node CREATE goes to the platform.
// The failure policy is Ignore: the quota is a plan limit, not a security
// boundary, and a platform outage must never stop the owner's machines
// from (re)joining their cluster; a node let in that way still counts
// against the next one.
func WebhookConfiguration(webhookURL string, caBundle []byte) *admissionregistrationv1.ValidatingWebhookConfiguration {
	ignore := admissionregistrationv1.Ignore
	none := admissionregistrationv1.SideEffectClassNone
	timeout := int32(5)
	return &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: WebhookName, Labels: map[string]string{"app.kubernetes.io/managed-by": "kubebyon"}},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name: webhookFQDN,
			ClientConfig: admissionregistrationv1.WebhookClientConfig{
				URL: &webhookURL, CABundle: caBundle,
			},
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
				Rule: admissionregistrationv1.Rule{
					APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"nodes"},
				},
			}},
			FailurePolicy:           &ignore,
			SideEffects:             &none,
			AdmissionReviewVersions: []string{"v1"},
			TimeoutSeconds:          &timeout,
		}},
	}
}

// SyncAllArgs asks for a SyncArgs job per ready cluster with
// the quota on. It runs periodically on River's leader; after a restart
// with a new base URL or CA bundle, the configurations carry the new ones
// within an interval.
type SyncAllArgs struct{}

// Kind implements river.JobArgs.
func (SyncAllArgs) Kind() string { return "node_quota_sync_all" }
