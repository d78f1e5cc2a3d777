package browsertest_test

import (
	"image/color"
	"os"
	"path/filepath"
	"testing"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/handlers/handlerstest"
	"github.com/kubebyon/kubebyon/internal/testenv"
)

// imageWidth waits for an image to load and reports its natural width (0
// when it failed to load).
func imageWidth(sel string, width *int) chromedp.Action {
	js := `new Promise(done => {
		const img = document.querySelector(` + "`" + sel + "`" + `);
		if (img.complete) { done(img.naturalWidth); return; }
		img.addEventListener("load", () => done(img.naturalWidth));
		img.addEventListener("error", () => done(0));
	})`
	return chromedp.Evaluate(js, width, func(p *runtime.EvaluateParams) *runtime.EvaluateParams {
		return p.WithAwaitPromise(true)
	})
}

// TestProfileSettingsInBrowser changes the name and language, uploads a
// picture, moves to a new email address with the mailed code, and changes
// the password, which signs out another client.
func TestProfileSettingsInBrowser(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	other, email := b.SignedUpUser(t, "journey")
	ctx := testenv.Browser(t)
	page := b.Server.URL + handlerstest.ProfilePage
	picture := filepath.Join(t.TempDir(), "me.png")
	require.NoError(t, os.WriteFile(picture, handlerstest.SolidPNG(t, 300, 200, color.NRGBA{30, 90, 200, 255}), 0o600))

	var flash, lang, srcBefore, srcAfter, shownEmail string
	var width int
	require.NoError(t, chromedp.Run(ctx,
		chromedp.Navigate(b.Server.URL+"/login?next="+handlerstest.ProfilePage),
		chromedp.SendKeys(`#email`, email, chromedp.ByQuery),
		chromedp.SendKeys(`#password`, "password of journey", chromedp.ByQuery),
		chromedp.Submit(`[data-testid="login-form"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`[data-testid="profile-form"]`, chromedp.ByQuery),

		chromedp.Clear(`#name`, chromedp.ByQuery),
		chromedp.SendKeys(`#name`, "Ada Browser", chromedp.ByQuery),
		chromedp.SetValue(`#language`, "zh-CN", chromedp.ByQuery),
		chromedp.Submit(`[data-testid="profile-form"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`[data-testid="flash"]`, chromedp.ByQuery),
		chromedp.Text(`[data-testid="flash"]`, &flash, chromedp.ByQuery),
		chromedp.AttributeValue(`html`, "lang", &lang, nil, chromedp.ByQuery),
	))
	require.Equal(t, "个人资料已保存。", flash)
	require.Equal(t, "zh-CN", lang)

	require.NoError(t, chromedp.Run(ctx,
		chromedp.AttributeValue(`[data-testid="avatar"]`, "src", &srcBefore, nil, chromedp.ByQuery),
		imageWidth(`[data-testid="avatar"]`, &width),
	))
	require.Equal(t, 256, width, "the initials avatar loads")
	width = 0
	require.NoError(t, chromedp.Run(ctx,
		chromedp.SetUploadFiles(`#avatar`, []string{picture}, chromedp.ByQuery),
		chromedp.Submit(`[data-testid="avatar-form"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`[data-testid="avatar-remove"]`, chromedp.ByQuery),
		chromedp.AttributeValue(`[data-testid="avatar"]`, "src", &srcAfter, nil, chromedp.ByQuery),
		imageWidth(`[data-testid="avatar"]`, &width),
	))
	require.NotEqual(t, srcBefore, srcAfter, "the page links to the new picture")
	require.Equal(t, 256, width, "the browser loaded the uploaded picture")

	newEmail := handlerstest.UniqueEmail("journey-new")
	require.NoError(t, chromedp.Run(ctx,
		chromedp.SendKeys(`#new_email`, newEmail, chromedp.ByQuery),
		chromedp.SendKeys(`#email_password`, "password of journey", chromedp.ByQuery),
		chromedp.Submit(`[data-testid="email-form"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`[data-testid="email-code-form"]`, chromedp.ByQuery),
	))
	code := handlerstest.CodeFrom(t, b.WaitMessages(t, newEmail, 1)[0])
	require.NoError(t, chromedp.Run(ctx,
		chromedp.SendKeys(`#code`, code, chromedp.ByQuery),
		chromedp.Submit(`[data-testid="email-code-form"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`[data-testid="email-form"]`, chromedp.ByQuery),
		chromedp.Text(`[data-testid="current-email"]`, &shownEmail, chromedp.ByQuery),
	))
	require.Equal(t, newEmail, shownEmail)

	require.True(t, other.SignedIn())
	require.NoError(t, chromedp.Run(ctx,
		chromedp.Navigate(page), // no flash left on the page
		chromedp.SendKeys(`#current_password`, "password of journey", chromedp.ByQuery),
		chromedp.SendKeys(`#new_password`, "a browser-made password", chromedp.ByQuery),
		chromedp.Submit(`[data-testid="password-form"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`[data-testid="flash"]`, chromedp.ByQuery),
		chromedp.Text(`[data-testid="flash"]`, &flash, chromedp.ByQuery),
	))
	require.Equal(t, "密码已修改，其他所有浏览器均已退出登录。", flash)
	require.False(t, other.SignedIn(), "the other client was signed out")
	b.SignIn(t, newEmail, "a browser-made password")
}
