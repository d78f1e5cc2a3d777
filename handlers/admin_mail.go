package handlers

import (
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/kubebyon/kubebyon/internal/adminauth"
	"github.com/kubebyon/kubebyon/internal/input"
	"github.com/kubebyon/kubebyon/internal/locale"
	"github.com/kubebyon/kubebyon/internal/mail"
	"github.com/kubebyon/kubebyon/internal/mailsettings"
	"github.com/kubebyon/kubebyon/views"
)

// mailFields are the plain fields of the mail settings form (the SMTP
// password is never shown back).
var mailFields = []string{
	mailsettings.FieldHost, mailsettings.FieldPort, mailsettings.FieldTLS, mailsettings.FieldUsername,
	mailsettings.FieldFrom, mailsettings.FieldPassword + "Clear", mailsettings.FieldTestTo,
}

func (h *Handlers) showAdminMailPage(c echo.Context) error {
	h.viewAsAPICall(c, "adminGetMail", nil)
	return h.renderAdminMail(c, http.StatusOK, nil, nil)
}

// renderAdminMail shows the mail settings page with f, the form as
// submitted (nil: the stored settings), and test, a test email's outcome
// (nil: none was sent).
func (h *Handlers) renderAdminMail(c echo.Context, status int, f *views.Form, test *views.AdminMailTest) error {
	st, unreadable, err := h.Mail.Load(c.Request().Context())
	if err != nil {
		return err
	}
	if f == nil {
		stored := mailForm(st)
		stored.Values[mailsettings.FieldTestTo] = actor(c).Email
		f = &stored
	}
	u, _ := currentUser(c)
	confirm, err := h.adminConfirm(c, u, "/admin/mail")
	if err != nil {
		return err
	}
	return render(c, status, views.AdminMailPage(views.AdminMail{
		Form: *f, Confirm: confirm, Source: string(h.Mail.Source(st)), Server: st.Server(), EnvServer: h.Mail.EnvServer(),
		PasswordStored: st.Password != "", Unreadable: unreadable, TLSModes: mailsettings.TLSModes, Test: test,
	}))
}

// mailForm shows stored settings in the form, without the password.
func mailForm(st mailsettings.Settings) views.Form {
	f := views.NewForm()
	f.Values[mailsettings.FieldHost] = st.Host
	f.Values[mailsettings.FieldTLS] = st.TLS
	if st.TLS == "" {
		f.Values[mailsettings.FieldTLS] = mailsettings.TLSStartTLS
	}
	if st.Port != 0 {
		f.Values[mailsettings.FieldPort] = strconv.Itoa(st.Port)
	}
	f.Values[mailsettings.FieldUsername] = st.Username
	f.Values[mailsettings.FieldFrom] = st.From
	return f
}

// mailChangeFrom reads the mail settings form. A port that is not a
// number reads as -1, which the range check refuses.
func mailChangeFrom(c echo.Context) (views.Form, mailsettings.Change) {
	f := formFrom(c, mailFields...)
	for name, v := range f.Values {
		f.Values[name] = strings.TrimSpace(v)
	}
	port := 0
	if p := f.Value(mailsettings.FieldPort); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil {
			n = -1
		}
		port = n
	}
	return f, mailsettings.Change{
		Settings: mailsettings.Settings{
			Host: strings.ToLower(f.Value(mailsettings.FieldHost)), Port: port, TLS: f.Value(mailsettings.FieldTLS),
			Username: f.Value(mailsettings.FieldUsername), From: f.Value(mailsettings.FieldFrom),
		},
		Password: mailsettings.SecretChange{
			Value: c.FormValue(mailsettings.FieldPassword), Clear: f.Value(mailsettings.FieldPassword+"Clear") == "on",
		},
		Confirm: c.FormValue("password"),
	}
}

// saveAdminMail is POST /admin/mail: every change needs the admin's
// password; an empty SMTP password keeps the stored one.
func (h *Handlers) saveAdminMail(c echo.Context) error {
	f, change := mailChangeFrom(c)
	changed, err := h.Mail.Apply(c.Request().Context(), change, actor(c))
	if err != nil {
		return adminSaveError(c, err, &f, "ErrAdminMailNotSaved", mailsettings.ErrConfirmRequired, func(status int) error {
			return h.renderAdminMail(c, status, &f, nil)
		})
	}
	if len(changed) == 0 {
		h.flash(c, "FlashAdminMailUnchanged")
	} else {
		h.flash(c, "FlashAdminMailSaved")
	}
	return redirect(c, "/admin/mail")
}

// testAdminMail is POST /admin/mail/test: a test email through the
// server the form names as typed (saved or not), sent now. The page comes
// back with the form as submitted and the outcome: 200 when the server
// took the message, 422 with its error otherwise.
func (h *Handlers) testAdminMail(c echo.Context) error {
	ctx := c.Request().Context()
	f, change := mailChangeFrom(c)
	to := f.Value(mailsettings.FieldTestTo)
	m := mail.Message{
		To:      to,
		Subject: locale.T(ctx, "MailAdminTestSubject"),
		Text:    locale.T(ctx, "MailAdminTestBody", map[string]any{"Email": actor(c).Email, "BaseURL": h.BaseURL}),
	}
	tested, err := h.Mail.Test(ctx, change, m, actor(c))
	test := &views.AdminMailTest{To: to, Server: tested.Server, Source: string(tested.Source)}
	var (
		invalid input.Errors
		sendErr *mailsettings.SendError
	)
	switch {
	case err == nil:
		return h.renderAdminMail(c, http.StatusOK, &f, test)
	case errors.Is(err, adminauth.ErrNotAdmin):
		return echo.ErrNotFound
	case errors.As(err, &invalid):
		for k, v := range invalid {
			f.Errors[k] = v
		}
		f.Error = "ErrAdminMailTestInvalid"
		return h.renderAdminMail(c, http.StatusUnprocessableEntity, &f, nil)
	case errors.Is(err, mailsettings.ErrNoServer):
		test.Error = err.Error()
	case errors.As(err, &sendErr):
		test.Error, test.Detail = mailFailureMsg(sendErr.Kind), sendErr.Err.Error()
	default:
		return err
	}
	return h.renderAdminMail(c, http.StatusUnprocessableEntity, &f, test)
}

// mailFailureMsg is the message ID of why a test email was not sent.
func mailFailureMsg(k mail.Failure) string {
	switch k {
	case mail.FailRefused:
		return "AdminMailTestRefused"
	case mail.FailDNS:
		return "AdminMailTestDNS"
	case mail.FailTimeout:
		return "AdminMailTestTimeout"
	case mail.FailTLS:
		return "AdminMailTestTLS"
	case mail.FailAuth:
		return "AdminMailTestAuth"
	case mail.FailRejected:
		return "AdminMailTestRejected"
	}
	return "AdminMailTestFailed"
}
