package browsertest_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubebyon/kubebyon/handlers/handlerstest"
	"github.com/kubebyon/kubebyon/internal/jointokens"
	"github.com/kubebyon/kubebyon/internal/testenv"
)

// TestJoinTokenInBrowser: the owner opens the join tokens from the cluster
// page, creates a token, copies the join command, and watches the events
// the join script reports arrive without a reload. Cordon and drain in the
// browser are TestNodesInBrowser's.
func TestJoinTokenInBrowser(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	c, email := b.SignedUpUser(t, "joinwatcher")
	cl, virt := b.ReadyVirtualCluster(t, c, "watched")

	ctx := testenv.Browser(t)
	browserSignIn(t, ctx, b.Server.URL, email, "password of joinwatcher")
	var command, copyLabel, copied string
	require.NoError(t, chromedp.Run(ctx,
		chromedp.Navigate(fmt.Sprintf("%s/clusters/%d", b.Server.URL, cl.ID)),
		// The endpoint panel loads after the page and pushes the buttons
		// down: a click before it lands where the button was.
		chromedp.WaitVisible(`[data-testid="cluster-endpoint-status"]`, chromedp.ByQuery),
		chromedp.Click(`[data-testid="cluster-join-tokens"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`[data-testid="join-token-form"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`[data-testid="join-tokens-empty"]`, chromedp.ByQuery),
		chromedp.SendKeys(`#description`, "rack 7", chromedp.ByQuery),
		chromedp.SetValue(`#lifetime`, "24h", chromedp.ByQuery),
		chromedp.Click(`[data-testid="join-token-create"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`[data-testid="join-command"]`, chromedp.ByQuery),
		chromedp.Value(`[data-testid="join-command"]`, &command, chromedp.ByQuery),
		// copy.js shows the copy button (it is hidden without JavaScript).
		chromedp.WaitVisible(`[data-testid="copy-join-command"]`, chromedp.ByQuery),
		// Record what the button copies, whichever way copy.js copies it.
		chromedp.Evaluate(`window.kubebyonCopied = "";
			document.addEventListener("copy", function () { window.kubebyonCopied = String(document.getSelection()); });
			if (navigator.clipboard) {
				navigator.clipboard.writeText = function (s) { window.kubebyonCopied = String(s); return Promise.resolve(); };
			}`, nil),
		chromedp.Click(`[data-testid="copy-join-command"]`, chromedp.ByQuery),
		chromedp.Poll(`document.querySelector('[data-testid="copy-join-command"]').textContent === "Copied"`, nil),
		chromedp.Text(`[data-testid="copy-join-command"]`, &copyLabel, chromedp.ByQuery),
		chromedp.Evaluate(`window.kubebyonCopied`, &copied),
	))
	m := handlerstest.JoinCommandToken.FindStringSubmatch(command)
	require.NotNil(t, m, command)
	token := m[1]
	require.Equal(t, fmt.Sprintf("curl -fsSL %s/join/%s | sudo sh", b.Server.URL, token), command)
	require.Equal(t, "Copied", copyLabel)
	require.Equal(t, command, copied, "the button copies the command itself")

	// The script reports its steps; the token's diagnostics poll for them.
	require.NoError(t, chromedp.Run(ctx, chromedp.Evaluate(`window.kubebyonSamePage = true`, nil)))
	for _, ev := range []url.Values{
		{"step": {"root"}, "status": {"ok"}, "host": {"node-a"}},
		{"step": {"systemd"}, "status": {"failed"}, "message": {"systemd is not running"}, "host": {"node-a"}},
	} {
		resp, err := http.PostForm(b.Server.URL+"/join/"+token+"/events", ev)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusNoContent, resp.StatusCode)
	}
	id, _, _ := strings.Cut(token, ".")
	under := `[data-testid="join-token"][data-token-id="` + id + `"] `
	var message string
	var samePage bool
	require.NoError(t, chromedp.Run(ctx,
		chromedp.WaitVisible(under+`[data-testid="join-event"][data-host="node-a"][data-step="root"][data-status="ok"]`, chromedp.ByQuery),
		chromedp.WaitVisible(under+`[data-testid="join-event"][data-host="node-a"][data-step="systemd"][data-status="failed"]`, chromedp.ByQuery),
		chromedp.Text(under+`[data-testid="join-event"][data-step="systemd"]`, &message, chromedp.ByQuery),
		chromedp.Evaluate(`window.kubebyonSamePage === true`, &samePage),
	))
	require.True(t, samePage, "the join events arrived without a reload")
	require.Contains(t, message, "systemd is not running")

	// The machine joins (kubelet files its CSR with the one-use token and
	// registers its Node) and the sync learns of it: the page shows the
	// node, the token used up, and the join command gone, still without a
	// reload.
	virt.KubeadmBootstrapBinding(t, jointokens.NodeGroup)
	require.NoError(t, testenv.FileNodeCSR(t, virt.TokenClient(t, token), "node-a"))
	_, err := virt.Client(t).CoreV1().Nodes().Create(context.Background(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	b.SyncJoinTokens(t, cl.ID)
	var nodes string
	require.NoError(t, chromedp.Run(ctx,
		chromedp.WaitVisible(under+`[data-testid="join-token-node"]`, chromedp.ByQuery),
		chromedp.Text(under+`[data-testid="join-token-nodes"]`, &nodes, chromedp.ByQuery),
		chromedp.Poll(`document.querySelector('[data-testid="join-command"]') === null`, nil),
		chromedp.Evaluate(`window.kubebyonSamePage === true`, &samePage),
	))
	require.Contains(t, nodes, "node-a")
	require.True(t, samePage)
}
