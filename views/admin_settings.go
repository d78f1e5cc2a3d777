package views

import "time"

// AdminSettings is the platform settings page.
type AdminSettings struct {
	// Form holds the fields as strings (never the secrets) and their
	// errors, by the names settings.FieldErrors uses.
	Form Form
	// Confirm is how the admin confirms a change of a secret.
	Confirm AdminConfirm
	Host    AdminHost
	// AccessKeyStored tells that a vCluster Platform access key is stored.
	AccessKeyStored bool
	// Test is the connection test the form asked for; nil when none ran.
	Test *AdminHostTest
	// Unreadable tells that stored secrets were sealed with another
	// KUBEBYON_SECRET_KEY.
	Unreadable bool
	// Kamaji is, when the default backend is Kamaji and the host lacks
	// its TenantControlPlane CRD (or could not be asked), the message ID
	// that says so; empty otherwise.
	Kamaji string
}

// AdminHost is where the host cluster's credentials come from now.
type AdminHost struct {
	Source     string // "stored", "file", "in-cluster" or "none"
	Path       string // KUBEBYON_KUBECONFIG, for "file"
	UploadedAt time.Time
	UploadedBy string
}

// AdminHostTest is the outcome of a connection test.
type AdminHostTest struct {
	// Source is what was tested: "upload", "stored", "file",
	// "in-cluster" or "none".
	Source string
	// Error is the catalog ID of why the test could not run, with the
	// values of its text; Detail is the technical cause.
	Error     string
	ErrorData map[string]any
	Detail    string

	Server  string
	Version string
	// Verbs are the table's columns; Rows one resource each.
	Verbs   []string
	Rows    []AdminPermissionRow
	Missing int
}

// AdminPermissionRow is one resource and its verbs.
type AdminPermissionRow struct {
	Resource   string
	Namespaced bool
	// Edge: only managed ingress through the platform edge needs it;
	// Counted: its missing verbs count (the edge is offered).
	Edge, Counted bool
	Cells         []AdminPermissionCell
}

// AdminPermissionCell is one verb on a resource: Required by the platform
// or not, and if so Allowed or missing.
type AdminPermissionCell struct {
	Verb     string
	Required bool
	Allowed  bool
}

// controlPlaneBackends are the control-plane backends to choose from.
var controlPlaneBackends = []struct{ Value, LabelID string }{
	{"vcluster", "AdminSettingsBackendVCluster"},
	{"kamaji", "AdminSettingsBackendKamaji"},
}

// accessModes are the choices of the default public access mode.
var accessModes = []struct{ Value, LabelID string }{
	{"nodeport", "AdminSettingsAccessNodePort"},
	{"loadbalancer", "AdminSettingsAccessLoadBalancer"},
}

// edgeAddressTypes are the host node addresses the edge can use.
var edgeAddressTypes = []struct{ Value, LabelID string }{
	{"InternalIP", "AdminSettingsEdgeInternalIP"},
	{"ExternalIP", "AdminSettingsEdgeExternalIP"},
}

// settingsTestSourceMsg says what a connection test used.
func settingsTestSourceMsg(source string) string {
	switch source {
	case "upload":
		return "AdminSettingsTestedUpload"
	case "stored":
		return "AdminSettingsTestedStored"
	case "file":
		return "AdminSettingsTestedFile"
	}
	return "AdminSettingsTestedInCluster"
}
