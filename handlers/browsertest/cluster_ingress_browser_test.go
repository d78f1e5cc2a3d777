package browsertest_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/kubebyon/kubebyon/handlers/handlerstest"
	"github.com/kubebyon/kubebyon/internal/dnsrecords"
	"github.com/kubebyon/kubebyon/internal/ingress"
	"github.com/kubebyon/kubebyon/internal/ingress/ingresstest"
	"github.com/kubebyon/kubebyon/internal/settings"
	"github.com/kubebyon/kubebyon/internal/testenv"
	"github.com/kubebyon/kubebyon/queries"
)

// TestClusterIngressInBrowser is the journey in Chromium, on a phone's
// screen: switch managed ingress on, watch it become ready without a
// reload, bind a host name and see the record to create, publish it in a
// real DNS server and see it verified with Check now, see its
// certificate issued, and switch off after a confirmation that lists the
// name.
func TestClusterIngressInBrowser(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	ctx := context.Background()
	q := queries.New(b.Pool)
	user, email := b.SignedUpUser(t, "ingress-journey")
	cl, virt := b.ReadyVirtualCluster(t, user, "shop")
	kc := virt.Client(t)
	srv := testenv.Knot(t, "clusters.test")
	require.NoError(t, dnsrecords.Store(ctx, q, b.Box, dnsrecords.Settings{
		Mode: dnsrecords.ModeRFC2136, Addresses: []string{"192.0.2.1"}, Resolver: srv.Addr, Server: srv.Addr, Zone: srv.Zone,
		KeyName: srv.KeyName, KeyAlgorithm: srv.KeyAlgorithm, KeySecret: srv.KeySecret, TTL: 60,
	}))
	rt, err := settings.Load(ctx, q, b.Box)
	require.NoError(t, err)
	rt.APIBaseDomain = "k8s.clusters.test"
	require.NoError(t, settings.Save(ctx, q, b.Box, rt))
	st := ingress.DefaultSettings()
	st.ChartPath, st.CertManagerChartPath = testenv.TraefikChart(t), testenv.CertManagerChart(t)
	st.AppsBaseDomain = "apps.clusters.test"
	require.NoError(t, ingress.SaveSettings(ctx, q, st))
	target := cl.Slug + ".apps.clusters.test"

	browser := testenv.Browser(t)
	require.NoError(t, chromedp.Run(browser, chromedp.EmulateViewport(390, 900)))
	browserSignIn(t, browser, b.Server.URL, email, "password of ingress-journey")
	// The cluster's Ingress tab.
	page := fmt.Sprintf("%s/clusters/%d/ingress", b.Server.URL, cl.ID)
	require.NoError(t, chromedp.Run(browser,
		chromedp.Navigate(page),
		chromedp.WaitVisible(`[data-testid="cluster-ingress-enable"]`, chromedp.ByQuery),
		chromedp.Click(`[data-testid="cluster-ingress-enable"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`[data-testid="cluster-ingress"][data-status="installing"]`, chromedp.ByQuery),
	))

	// The jobs, as the workers would run them, while the page watches.
	b.WorkIngress(t, cl.ID)
	ingresstest.PlayRollout(t, kc, 2, 2)
	b.WorkIngress(t, cl.ID)
	var events string
	var out []string
	require.NoError(t, chromedp.Run(browser,
		chromedp.WaitVisible(`[data-testid="cluster-ingress"][data-status="ready"]`, chromedp.ByQuery),
		// The overview's latest events say so.
		chromedp.Navigate(fmt.Sprintf("%s/clusters/%d", b.Server.URL, cl.ID)),
		chromedp.WaitVisible(`[data-testid="cluster-event"][data-reason="IngressReady"]`, chromedp.ByQuery),
		chromedp.Text(`[data-testid="cluster-events"]`, &events, chromedp.ByQuery),
		chromedp.Evaluate(overflowing, &out),
	))
	require.Contains(t, events, "The ingress controller runs on its nodes.")
	require.Empty(t, out, "the cluster page at 390px")

	// A host name: the record to create, then verified.
	var instruction, state string
	require.NoError(t, chromedp.Run(browser,
		chromedp.Navigate(page),
		chromedp.WaitVisible(`[data-testid="cluster-hostname-form"]`, chromedp.ByQuery),
		chromedp.SendKeys(`[data-testid="cluster-hostname-form"] input[name="name"]`, "www.clusters.test", chromedp.ByQuery),
		chromedp.Click(`[data-testid="cluster-hostname-add"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`[data-testid="cluster-hostname"][data-state="pending"]`, chromedp.ByQuery),
		chromedp.Text(`[data-testid="cluster-hostname-instruction"]`, &instruction, chromedp.ByQuery),
	))
	require.Contains(t, instruction, "www.clusters.test CNAME "+target)
	w := &dnsrecords.RFC2136{Server: srv.Addr, Zone: srv.Zone, KeyName: srv.KeyName, Algorithm: srv.KeyAlgorithm, Secret: srv.KeySecret, TTL: 60}
	require.NoError(t, w.SetCNAME(ctx, "www.clusters.test", target))
	require.NoError(t, chromedp.Run(browser,
		chromedp.Click(`[data-testid="cluster-hostnames-check"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`[data-testid="cluster-hostname"][data-state="verified"]`, chromedp.ByQuery),
		chromedp.Text(`[data-testid="cluster-hostname-cert"]`, &state, chromedp.ByQuery),
	))
	require.Contains(t, state, "being issued")

	// cert-manager issues it.
	certs := dynamic.NewForConfigOrDie(virt.Config).Resource(schema.GroupVersionResource{Group: "cert-manager.io", Version: "v1", Resource: "certificates"}).Namespace(ingress.Namespace)
	cert, err := certs.Get(ctx, ingress.CertificateName("www.clusters.test"), metav1.GetOptions{})
	require.NoError(t, err)
	expiry := time.Now().Add(90 * 24 * time.Hour).UTC().Truncate(time.Second)
	cert.Object["status"] = map[string]any{
		"notAfter":   expiry.Format(time.RFC3339),
		"conditions": []any{map[string]any{"type": "Ready", "status": "True", "reason": "Ready", "message": "Certificate is up to date and has not expired", "lastTransitionTime": time.Now().UTC().Format(time.RFC3339)}},
	}
	_, err = certs.UpdateStatus(ctx, cert, metav1.UpdateOptions{})
	require.NoError(t, err)
	require.NoError(t, chromedp.Run(browser,
		chromedp.Click(`[data-testid="cluster-hostnames-check"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`[data-testid="cluster-hostname-cert"][data-cert="ready"]`, chromedp.ByQuery),
		chromedp.Text(`[data-testid="cluster-hostname-cert"]`, &state, chromedp.ByQuery),
		chromedp.Evaluate(overflowing, &out),
	))
	require.Contains(t, state, "ready, valid until")
	require.Empty(t, out, "the cluster page with a host name at 390px")

	// Off, after the confirmation that lists the name.
	var listed string
	require.NoError(t, chromedp.Run(browser,
		chromedp.Click(`[data-testid="cluster-ingress-disable"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`[data-testid="cluster-ingress-disable-confirm"]`, chromedp.ByQuery),
		chromedp.Text(`[data-testid="cluster-ingress-disable-hostnames"]`, &listed, chromedp.ByQuery),
		chromedp.Click(`[data-testid="cluster-ingress-disable-submit"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`[data-testid="cluster-ingress"][data-status="removing"]`, chromedp.ByQuery),
	))
	require.Contains(t, strings.TrimSpace(listed), "www.clusters.test")
	b.WorkIngress(t, cl.ID)
	require.NoError(t, chromedp.Run(browser,
		chromedp.WaitVisible(`[data-testid="cluster-ingress"][data-status="off"]`, chromedp.ByQuery),
	))
}
