package handlers

import (
	"errors"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/kubebyon/kubebyon/internal/locale"
	"github.com/kubebyon/kubebyon/internal/mail"
	"github.com/kubebyon/kubebyon/internal/mailsettings"
)

// apiMail is the mail server settings, without the SMTP password. Source
// is the server in effect: settings (these), env (KUBEBYON_SMTP_URL) or
// none (mail is written to the log); Server is its host:port ("" for
// none).
type apiMail struct {
	Host                   string `json:"host"`
	Port                   int    `json:"port"`
	TLS                    string `json:"tls"`
	Username               string `json:"username"`
	From                   string `json:"from"`
	SMTPPasswordSet        bool   `json:"smtp_password_set"`
	SMTPPasswordUnreadable bool   `json:"smtp_password_unreadable"`
	Source                 string `json:"source"`
	Server                 string `json:"server"`
}

// apiMailPatch is a PATCH of the mail settings, and the server a test
// email goes through. SMTPPassword is a secret (secretChange). Every
// field given empty (port 0) clears the settings.
type apiMailPatch struct {
	Host         *string `json:"host"`
	Port         *int    `json:"port"`
	TLS          *string `json:"tls"`
	Username     *string `json:"username"`
	From         *string `json:"from"`
	SMTPPassword *string `json:"smtp_password"`
}

var mailAPIFields = map[string]string{mailsettings.FieldPassword: "smtp_password", mailsettings.FieldTestTo: "to"}

// showAPIMail is GET /api/v1/admin/settings/mail.
func (h *Handlers) showAPIMail(c echo.Context) error {
	if err := setETag(c, h.Mail.Tag); err != nil {
		return err
	}
	st, unreadable, err := h.Mail.Load(c.Request().Context())
	if err != nil {
		return err
	}
	out := apiMail{
		Host: st.Host, Port: st.Port, TLS: mailTLS(st), Username: st.Username, From: st.From,
		SMTPPasswordSet: st.Password != "", SMTPPasswordUnreadable: unreadable, Source: string(h.Mail.Source(st)),
	}
	switch out.Source {
	case string(mailsettings.SourceSettings):
		out.Server = st.Server()
	case string(mailsettings.SourceEnv):
		out.Server = h.Mail.EnvServer()
	}
	return c.JSON(http.StatusOK, out)
}

// mailTLS is the settings' TLS mode, STARTTLS when none is stored (as the
// form shows it).
func mailTLS(st mailsettings.Settings) string {
	if st.TLS == "" {
		return mailsettings.TLSStartTLS
	}
	return st.TLS
}

// mailChange is the change p makes of the stored settings, which the
// form would show: the fields given, trimmed, the host in lower case.
func (h *Handlers) mailChange(c echo.Context, p apiMailPatch) (mailsettings.Change, error) {
	st, _, err := h.Mail.Load(c.Request().Context())
	if err != nil {
		return mailsettings.Change{}, err
	}
	st.TLS = mailTLS(st)
	for _, f := range []struct{ dst, v *string }{
		{&st.Host, p.Host}, {&st.TLS, p.TLS}, {&st.Username, p.Username}, {&st.From, p.From},
	} {
		if f.v != nil {
			*f.dst = strings.TrimSpace(*f.v)
		}
	}
	st.Host = strings.ToLower(st.Host)
	patch(&st.Port, p.Port)
	return mailsettings.Change{Settings: st, Password: secretChange(p.SMTPPassword)}, nil
}

// updateAPIMail is PATCH /api/v1/admin/settings/mail.
func (h *Handlers) updateAPIMail(c echo.Context) error {
	var body apiMailPatch
	if err := decodeJSON(c, &body); err != nil {
		return err
	}
	change, err := h.mailChange(c, body)
	if err != nil {
		return err
	}
	if _, err := h.Mail.Apply(c.Request().Context(), change, actor(c)); err != nil {
		return adminAPIError(err, mailAPIFields)
	}
	return h.showAPIMail(c)
}

// apiMailTestBody is a test email: to an address (the admin's own when
// absent), through the stored server as the fields given change it.
type apiMailTestBody struct {
	apiMailPatch
	To *string `json:"to"`
}

// apiMailTest is what came of a test email: Sent, or Error (and Detail,
// the server's or the network's own words) says why not.
type apiMailTest struct {
	Sent   bool   `json:"sent"`
	To     string `json:"to"`
	Source string `json:"source"`
	Server string `json:"server"`
	Error  string `json:"error,omitempty"`
	Detail string `json:"detail,omitempty"`
}

// testAPIMail is POST /api/v1/admin/settings/mail/test: a test email
// through the server the settings would name with the fields given,
// saved or not, sent now. A test that ran is 200 whatever came of it.
func (h *Handlers) testAPIMail(c echo.Context) error {
	var body apiMailTestBody
	if err := decodeOptionalJSON(c, &body); err != nil {
		return err
	}
	ctx := c.Request().Context()
	change, err := h.mailChange(c, body.apiMailPatch)
	if err != nil {
		return err
	}
	to := actor(c).Email
	if body.To != nil {
		to = strings.TrimSpace(*body.To)
	}
	m := mail.Message{
		To:      to,
		Subject: locale.T(ctx, "MailAdminTestSubject"),
		Text:    locale.T(ctx, "MailAdminTestBody", map[string]any{"Email": actor(c).Email, "BaseURL": h.BaseURL}),
	}
	tested, err := h.Mail.Test(ctx, change, m, actor(c))
	out := apiMailTest{Sent: err == nil, To: to, Source: string(tested.Source), Server: tested.Server}
	var sendErr *mailsettings.SendError
	switch {
	case err == nil:
	case errors.Is(err, mailsettings.ErrNoServer):
		out.Error = locale.T(ctx, err.Error())
	case errors.As(err, &sendErr):
		out.Error, out.Detail = locale.T(ctx, mailFailureMsg(sendErr.Kind), map[string]any{"Server": tested.Server}), sendErr.Err.Error()
	default:
		return adminAPIError(err, mailAPIFields)
	}
	return c.JSON(http.StatusOK, out)
}
