package nodequota

import (
	"net/url"
	"strconv"
	"time"

	"github.com/riverqueue/river"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubebyon/kubebyon/internal/checks"
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

// SyncInterval paces the periodic re-sync of a ready cluster's node quota
// webhook (checks.NodeQuotaSync): every SyncInterval while the quota is
// on, in case someone deleted or changed the configuration, or a control
// plane came back without it; idle while it is off.
const SyncInterval = 10 * time.Minute

// SyncArgs asks for a cluster's node quota webhook to match its switch
// (worked by jobs.NodeQuotaSyncWorker): present with the current URL when
// enabled, absent otherwise.
//
// The job is not unique when switching the quota on or the cluster's
// becoming ready asks for it: River's uniqueness always covers running
// jobs, so a switch made while a sync runs (which may have read the
// switch already) would be dropped as a duplicate. Only the periodic
// re-sync is unique (ResyncOpts), as it only repeats what the last one
// did.
type SyncArgs struct {
	ClusterID int64 `json:"cluster_id"`
}

// Kind implements river.JobArgs.
func (SyncArgs) Kind() string { return "node_quota_sync" }

// InsertOpts implements river.JobArgsWithInsertOpts.
func (SyncArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: clusters.Queue, MaxAttempts: 10}
}

// ResyncOpts are the periodic re-sync's: in the checks queue, unique while
// one has not finished (so that an unreachable cluster does not pile them
// up), and not retried by River, as its check comes due again (sooner
// while it fails).
func ResyncOpts() *river.InsertOpts {
	return &river.InsertOpts{Queue: checks.Queue, MaxAttempts: 1, UniqueOpts: checks.UniqueWhileWaiting()}
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

// RewriteArgs makes every re-sync due at once and switches the quota on in
// the ready clusters without it (jobs.NodeQuotaRewriteWorker): it runs
// when the workers start, so that a restart with a new base URL or CA
// bundle rewrites the webhook configurations at once, and daily.
type RewriteArgs struct{}

// Kind implements river.JobArgs.
func (RewriteArgs) Kind() string { return "node_quota_rewrite" }
