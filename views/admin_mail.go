package views

// AdminMail is the mail server settings page.
type AdminMail struct {
	// Form holds the fields (never the SMTP password) and their errors.
	Form Form
	// Confirm is how the admin confirms a change.
	Confirm AdminConfirm
	// Source is where the mail server in effect comes from: "settings",
	// "env" (KUBEBYON_SMTP_URL) or "none" (mail is written to the log);
	// Server the stored settings' host:port, EnvServer the variable's.
	Source    string
	Server    string
	EnvServer string
	// PasswordStored tells that an SMTP password is stored; Unreadable
	// that it was sealed with another KUBEBYON_SECRET_KEY.
	PasswordStored bool
	Unreadable     bool
	TLSModes       []string
	// Test is the outcome of a test email; nil when none was sent.
	Test *AdminMailTest
}

// AdminMailTest is the outcome of a test email.
type AdminMailTest struct {
	To     string
	Server string
	// Source is what the test went through: "settings" (the form) or
	// "env".
	Source string
	// Error is the catalog ID of why it was not sent ("" when it was),
	// Detail the server's or the network's own words.
	Error  string
	Detail string
}

// mailTLSLabel is the message ID of a TLS mode's label.
func mailTLSLabel(mode string) string {
	switch mode {
	case "none":
		return "AdminMailTLSNone"
	case "smtps":
		return "AdminMailTLSImplicit"
	}
	return "AdminMailTLSStartTLS"
}
