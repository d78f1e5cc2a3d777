package handlers_test

import (
	"context"
	"net"
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/handlers"
	"github.com/kubebyon/kubebyon/handlers/handlerstest"
	"github.com/kubebyon/kubebyon/internal/testenv"
)

const mailPage = "/admin/mail"

// mailForm is the mail settings form for mailpit mp as typed by an admin
// whose password is "password of <admin>": mp's credentials, if any.
func mailForm(t *testing.T, mp *testenv.Mailpit, admin string) url.Values {
	t.Helper()
	u, err := url.Parse(mp.SMTPURL)
	require.NoError(t, err)
	return url.Values{
		"host": {u.Hostname()}, "port": {u.Port()}, "tls": {"none"},
		"username": {mp.Username}, "smtpPassword": {mp.Password},
		"from": {"Platform Mail <platform@mail.test>"}, "password": {"password of " + admin},
	}
}

// TestAdminMailSettingsTakeEffectAtOnce: a mail server saved in the admin
// area carries the platform's next email, with no restart; the page says
// which server is in effect; clearing the settings goes back to
// KUBEBYON_SMTP_URL. The password is sealed and never shown or audited.
func TestAdminMailSettingsTakeEffectAtOnce(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	admin, _ := b.SignedUpAdmin(t, "postmaster")
	_, userEmail := b.SignedUpUser(t, "forgetful")
	// The sign-up code and the sign-in notice, through KUBEBYON_SMTP_URL.
	b.WaitMessages(t, userEmail, 2)
	auth := testenv.MailAuth(t)

	code, body := admin.Get(mailPage)
	require.Equal(t, http.StatusOK, code)
	require.Regexp(t, `data-testid="admin-nav-mail"\s+aria-current="page"`, body)
	require.Contains(t, body, `data-source="env"`, "KUBEBYON_SMTP_URL is in effect")
	require.Contains(t, body, "No password is stored.")

	resp := admin.Post(mailPage, mailPage, mailForm(t, auth, "postmaster"))
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, handlerstest.ReadBody(t, resp))
	_, body = admin.Get(mailPage)
	require.Contains(t, body, "Email settings saved.")
	require.Contains(t, body, `data-source="settings"`)
	require.Contains(t, body, "A password is stored")
	require.Contains(t, body, `value="Platform Mail &lt;platform@mail.test&gt;"`)
	require.NotContains(t, body, auth.Password)
	row := b.MailRow(t)
	require.NotEmpty(t, row)
	require.NotContains(t, row, auth.Password, "the password is sealed")
	raw, events := b.MailEvents(t, "admin.mail_update")
	require.Len(t, events, 1)
	require.ElementsMatch(t, []any{"from", "host", "port", "smtpPassword", "tls", "username"}, events[0]["changed"])
	require.Equal(t, "replaced", events[0]["smtpPassword"])
	require.NotContains(t, raw[0], auth.Password)

	// The reset code goes through the saved server, from the saved sender.
	anon := b.Client(t)
	resp = anon.Post("/password/reset", "/password/reset", url.Values{"email": {userEmail}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	b.DeliverMail(t, userEmail)
	msgs := auth.WaitMessages(t, userEmail, 1)
	require.Contains(t, msgs[0].Subject, "Reset your KubeBYON password")
	require.Len(t, b.Mail.Messages(t, userEmail), 2, "nothing more went through KUBEBYON_SMTP_URL")

	// Saving the same again changes nothing and writes nothing.
	same := mailForm(t, auth, "postmaster")
	same.Set("smtpPassword", "")
	resp = admin.Post(mailPage, mailPage, same)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, handlerstest.ReadBody(t, resp))
	_, body = admin.Get(mailPage)
	require.Contains(t, body, "Nothing changed.")
	_, events = b.MailEvents(t, "admin.mail_update")
	require.Len(t, events, 1)

	// Cleared, KUBEBYON_SMTP_URL is back.
	resp = admin.Post(mailPage, mailPage, url.Values{"tls": {"starttls"}, "smtpPasswordClear": {"on"}, "password": {"password of postmaster"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, handlerstest.ReadBody(t, resp))
	_, body = admin.Get(mailPage)
	require.Contains(t, body, `data-source="env"`)
	require.Contains(t, body, "No password is stored.")
	_, events = b.MailEvents(t, "admin.mail_update")
	require.Len(t, events, 2)
	require.Equal(t, "cleared", events[1]["smtpPassword"])
	// (SignedUpUser reads the sign-up code from KUBEBYON_SMTP_URL's mailpit.)
	_, newcomer := b.SignedUpUser(t, "newcomer")
	require.Empty(t, auth.Messages(t, newcomer))
}

// TestAdminMailTestEmail: the test email goes through the server in the
// form as typed, saved or not, and says in words why it could not.
func TestAdminMailTestEmail(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	admin, adminEmail := b.SignedUpAdmin(t, "tester")
	auth := testenv.MailAuth(t)

	// Before saving: the form as typed, to the admin's own address by
	// default.
	_, body := admin.Get(mailPage)
	require.Contains(t, body, `value="`+adminEmail+`"`)
	form := mailForm(t, auth, "tester")
	form.Set("testTo", adminEmail)
	resp := admin.Post(mailPage, "/admin/mail/test", form)
	body = handlerstest.ReadBody(t, resp)
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	require.Contains(t, body, "Test email sent to "+adminEmail+" through 127.0.0.1:")
	require.Contains(t, body, `value="Platform Mail &lt;platform@mail.test&gt;"`, "the form as typed")
	msg := auth.WaitMessages(t, adminEmail, 1)[0]
	require.Equal(t, "KubeBYON test email", msg.Subject)
	require.Empty(t, b.MailRow(t), "testing saves nothing")

	to := handlerstest.UniqueEmail("inbox")
	_, port, err := net.SplitHostPort(handlerstest.ClosedPort(t))
	require.NoError(t, err)
	tests := []struct {
		name   string
		change []string
		want   []string
	}{
		{"wrong password", []string{"smtpPassword", "not the password"}, []string{"refused the user name and password", "535"}},
		{"nothing listening", []string{"port", port}, []string{"connection refused", "Check the host and port"}},
		{"TLS to a plain server", []string{"tls", "smtps"}, []string{"TLS with 127.0.0.1:", "tls: "}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := admin.Post(mailPage, "/admin/mail/test", handlerstest.FormWith(form, append([]string{"testTo", to}, tt.change...)...))
			body := handlerstest.ReadBody(t, resp)
			require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode, body)
			require.Contains(t, body, `data-testid="mail-test-error"`)
			for _, w := range tt.want {
				require.Contains(t, body, w)
			}
			require.Contains(t, body, `value="`+to+`"`, "the form as typed")
		})
	}
	require.Empty(t, auth.Messages(t, to))

	raw, events := b.MailEvents(t, "admin.mail_test")
	require.Len(t, events, 4)
	require.Equal(t, adminEmail, events[0]["to"])
	require.Equal(t, true, events[0]["sent"])
	require.Equal(t, false, events[1]["sent"])
	require.Equal(t, "auth", events[1]["failure"])
	require.Equal(t, "refused", events[2]["failure"])
	require.Equal(t, "tls", events[3]["failure"])
	for _, r := range raw {
		require.NotContains(t, r, auth.Password)
		require.NotContains(t, r, "not the password")
	}

	// Saved, an empty password field tests with the stored password, but
	// only on the saved server: another name for it gets none.
	resp = admin.Post(mailPage, mailPage, form)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, handlerstest.ReadBody(t, resp))
	resp = admin.Post(mailPage, "/admin/mail/test", handlerstest.FormWith(form, "smtpPassword", "", "testTo", to))
	require.Equal(t, http.StatusOK, resp.StatusCode, handlerstest.ReadBody(t, resp))
	auth.WaitMessages(t, to, 1)
	resp = admin.Post(mailPage, "/admin/mail/test", handlerstest.FormWith(form, "smtpPassword", "", "host", "localhost", "testTo", to))
	body = handlerstest.ReadBody(t, resp)
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode, body)
	require.Contains(t, body, "refused the user name and password")

}

// TestAdminMailWithNoServer: with neither settings nor KUBEBYON_SMTP_URL,
// the page says mail goes to the log, and there is nothing to test.
func TestAdminMailWithNoServer(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t, func(d *handlers.Deps) { d.Mail.EnvURL = nil })
	admin, _ := b.SignedUpAdmin(t, "lonely")
	_, body := admin.Get(mailPage)
	require.Contains(t, body, `data-source="none"`)
	require.Contains(t, body, "written to the server&#39;s log")
	to := handlerstest.UniqueEmail("nowhere")
	resp := admin.Post(mailPage, "/admin/mail/test", url.Values{"tls": {"starttls"}, "testTo": {to}})
	body = handlerstest.ReadBody(t, resp)
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode, body)
	require.Contains(t, body, "there is nothing to test")
	_, events := b.MailEvents(t, "admin.mail_test")
	require.Empty(t, events, "nothing was sent")
}

func TestAdminMailRefusesBadFields(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	admin, _ := b.SignedUpAdmin(t, "strict")
	auth := testenv.MailAuth(t)
	form := mailForm(t, auth, "strict")
	tests := []struct {
		name   string
		change []string
		field  string
		typed  string
	}{
		{"no host", []string{"host", ""}, "host", `value="Platform Mail &lt;platform@mail.test&gt;"`},
		{"host with a scheme", []string{"host", "smtp://mail.example.com"}, "host", `value="smtp://mail.example.com"`},
		{"port zero", []string{"port", "0"}, "port", `value="0"`},
		{"port too high", []string{"port", "65536"}, "port", `value="65536"`},
		{"port not a number", []string{"port", "smtp"}, "port", `value="smtp"`},
		{"TLS mode", []string{"tls", "ssl3"}, "tls", `value="Platform Mail &lt;platform@mail.test&gt;"`},
		{"sender", []string{"from", "not an address"}, "from", `value="not an address"`},
		{"password without user", []string{"username", ""}, "username", `value="Platform Mail &lt;platform@mail.test&gt;"`},
		{"no confirmation", []string{"password", ""}, "password", `value="Platform Mail &lt;platform@mail.test&gt;"`},
		{"wrong confirmation", []string{"password", "not mine"}, "password", `value="Platform Mail &lt;platform@mail.test&gt;"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := admin.Post(mailPage, mailPage, handlerstest.FormWith(form, tt.change...))
			body := handlerstest.ReadBody(t, resp)
			require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode, body)
			require.Contains(t, body, `data-testid="error-`+tt.field+`"`)
			require.Contains(t, body, tt.typed, "what was typed is kept")
			require.NotContains(t, body, auth.Password)
		})
	}
	resp := admin.Post(mailPage, "/admin/mail/test", handlerstest.FormWith(form, "testTo", "nobody"))
	body := handlerstest.ReadBody(t, resp)
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode, body)
	require.Contains(t, body, `data-testid="error-testTo"`)
	require.Empty(t, b.MailRow(t), "nothing was saved")
	_, events := b.MailEvents(t, "admin.mail_update")
	require.Empty(t, events)
	_, events = b.MailEvents(t, "admin.mail_test")
	require.Empty(t, events, "no test email was tried")
}

func TestAdminMailIsHiddenFromOthers(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	user, _ := b.SignedUpUser(t, "curious")
	visitor := b.Client(t)
	auth := testenv.MailAuth(t)
	for _, who := range []struct {
		name     string
		c        *handlerstest.Client
		formPage string
	}{{"visitor", visitor, "/login"}, {"user", user, "/"}} {
		code, body := who.c.Get(mailPage)
		require.Equal(t, http.StatusNotFound, code, who.name)
		require.Contains(t, body, "Page not found")
		for _, path := range []string{mailPage, "/admin/mail/test"} {
			form := mailForm(t, auth, "curious")
			form.Set("testTo", handlerstest.UniqueEmail("curious"))
			resp := who.c.Post(who.formPage, path, form)
			require.Equal(t, http.StatusNotFound, resp.StatusCode, who.name+" "+path)
			require.Empty(t, auth.Messages(t, form.Get("testTo")))
		}
	}
	require.Empty(t, b.MailRow(t))
	var n int
	require.NoError(t, b.Pool.QueryRow(context.Background(), "SELECT count(*) FROM audit_events WHERE action LIKE 'admin.mail%'").Scan(&n))
	require.Zero(t, n)
}
