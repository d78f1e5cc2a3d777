package views

// AdminBranding is the branding and session settings page.
type AdminBranding struct {
	Form Form
	// LogoURL is the stored logo's address, "" for none.
	LogoURL string
	// Languages are the default languages offered, as catalog tags.
	Languages []string
	// BaseURL is KUBEBYON_BASE_URL; Loopback says only this machine
	// reaches it.
	BaseURL  string
	Loopback bool
}

// languageLabel is the message ID of a language's name.
func languageLabel(tag string) string {
	if tag == "zh-CN" {
		return "LanguageChinese"
	}
	return "LanguageEnglish"
}
