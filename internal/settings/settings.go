// Package settings holds the platform settings admins edit in the back
// office: the host cluster, the vcluster chart, the vCluster Platform
// connection that private nodes need, and cluster defaults. Secret values
// are encrypted with the platform key before they are stored.
//
// Start-up settings (environment and flags) are package config; the admin's
// edit of these settings, with its checks and audit event, is adminsettings.
package settings

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubebyon/kubebyon/internal/input"
	"github.com/kubebyon/kubebyon/internal/secrets"
	"github.com/kubebyon/kubebyon/queries"
)

// Access modes of a cluster's public entry.
const (
	AccessNodePort     = "nodeport"
	AccessLoadBalancer = "loadbalancer"
)

// The host node address types the edge can send connections to (the
// type names of a Node's status.addresses).
const (
	AddressInternalIP = "InternalIP"
	AddressExternalIP = "ExternalIP"
)

// Runtime is the cluster runtime's settings.
type Runtime struct {
	// HostKubeconfig is an uploaded kubeconfig for the host cluster (secret).
	// Empty: KUBEBYON_KUBECONFIG, else the in-cluster service account.
	HostKubeconfig string `json:"-"`

	// The vcluster Helm chart: a local chart directory (air-gapped
	// installs) wins over the repository and version.
	ChartRepo    string `json:"chartRepo"`
	ChartVersion string `json:"chartVersion"`
	ChartPath    string `json:"chartPath"`

	// The vCluster Platform connection whose license private nodes need:
	// its host, an access key (secret), project, and whether to skip TLS
	// verification.
	PlatformHost      string `json:"platformHost"`
	PlatformAccessKey string `json:"-"`
	PlatformProject   string `json:"platformProject"`
	PlatformInsecure  bool   `json:"platformInsecure"`

	// DefaultAccessMode is nodeport or loadbalancer.
	DefaultAccessMode string `json:"defaultAccessMode"`
	// EdgeAddressType is the host node address (InternalIP or ExternalIP)
	// the edge sends a NodePort cluster's connections to.
	EdgeAddressType string `json:"edgeAddressType"`
	// APIBaseDomain: cluster API endpoints are <slug>.<APIBaseDomain>.
	APIBaseDomain string `json:"apiBaseDomain"`
	// ConsoleHost and ConsoleBackend, both set, make the edge pass the
	// console's own host name through to the console's HTTPS server
	// (host:port) on its API port, so that one public address serves the
	// console and the clusters.
	ConsoleHost    string `json:"consoleHost"`
	ConsoleBackend string `json:"consoleBackend"`
	// Default virtual cluster networks. PodCIDR is every new cluster's
	// Pod network while no pool is set.
	PodCIDR     string `json:"podCIDR"`
	ServiceCIDR string `json:"serviceCIDR"`
	// PodCIDRPool, when set, gives each new cluster a Pod network of its
	// own: a block of PodCIDRBlock bits from the pool that overlaps no
	// other cluster's (IPv4), as routes to tenants' pods through the
	// platform edge need (clusters.Service.Create allocates it).
	PodCIDRPool  string `json:"podCIDRPool"`
	PodCIDRBlock int    `json:"podCIDRBlock"`
	// AllowedVersions are the Kubernetes versions users may pick, newest
	// first (the first is the default).
	AllowedVersions []string `json:"allowedVersions"`
	// NodePortMin/Max bound the NodePorts the platform hands out.
	NodePortMin int `json:"nodePortMin"`
	NodePortMax int `json:"nodePortMax"`

	// Backend is the control-plane backend of new clusters whose plan
	// names none: BackendVCluster or BackendKamaji.
	Backend string `json:"backend"`
	// KamajiDataStore names the Kamaji DataStore tenant control planes
	// use; empty, Kamaji's default DataStore.
	KamajiDataStore string `json:"kamajiDataStore"`
	// PublicAPIPort is the port the edge serves cluster APIs on, which
	// kubeconfigs and join commands name (443 is left out of them).
	PublicAPIPort int `json:"publicAPIPort"`
	// PackageMirror is where the kubeadm join script installs kubelet,
	// kubeadm and containerd from instead of pkgs.k8s.io, for machines
	// without internet access: a mirror with the same layout.
	PackageMirror string `json:"packageMirror"`
}

// The control-plane backends.
const (
	// BackendVCluster runs a cluster's control plane with the vcluster
	// chart, private nodes on: nodes need a vCluster Platform licence.
	BackendVCluster = "vcluster"
	// BackendKamaji runs it as a Kamaji TenantControlPlane: open, and
	// nodes join with plain kubeadm.
	BackendKamaji = "kamaji"
)

// Backends are the known control-plane backends.
var Backends = []string{BackendVCluster, BackendKamaji}

// VClusterVersion is the vcluster release whose config types this build
// uses; the default chart version and the control plane image tag.
const VClusterVersion = "0.30.0"

// Defaults are the settings before an admin changes anything.
func Defaults() Runtime {
	return Runtime{
		ChartRepo:         "https://charts.loft.sh",
		ChartVersion:      VClusterVersion,
		DefaultAccessMode: AccessNodePort,
		EdgeAddressType:   AddressInternalIP,
		PodCIDR:           "10.244.0.0/16",
		ServiceCIDR:       "10.96.0.0/16",
		PodCIDRPool:       "10.128.0.0/9",
		PodCIDRBlock:      20,
		AllowedVersions:   []string{"v1.34.0"},
		NodePortMin:       30000,
		NodePortMax:       32767,
		Backend:           BackendVCluster,
		PublicAPIPort:     443,
	}
}

// stored is Runtime as it sits in the settings table: secrets sealed.
type stored struct {
	Runtime
	HostKubeconfigSealed    string `json:"hostKubeconfigSealed,omitempty"`
	PlatformAccessKeySealed string `json:"platformAccessKeySealed,omitempty"`
}

// RuntimeKey is the settings row of the Runtime settings.
const RuntimeKey = "runtime"

// Load reads the runtime settings, filling defaults for what was never set.
func Load(ctx context.Context, q *queries.Queries, box *secrets.Box) (Runtime, error) {
	row, err := q.SettingGet(ctx, RuntimeKey)
	if errors.Is(err, pgx.ErrNoRows) {
		return Defaults(), nil
	}
	if err != nil {
		return Runtime{}, fmt.Errorf("load runtime settings: %w", err)
	}
	s := stored{Runtime: Defaults()}
	if err := json.Unmarshal(row.Value, &s); err != nil {
		return Runtime{}, fmt.Errorf("decode runtime settings: %w", err)
	}
	var unreadable []string
	for _, f := range []struct {
		name   string
		sealed string
		into   *string
	}{{"hostKubeconfig", s.HostKubeconfigSealed, &s.HostKubeconfig}, {"platformAccessKey", s.PlatformAccessKeySealed, &s.PlatformAccessKey}} {
		if f.sealed == "" {
			continue
		}
		b, err := box.Open(f.sealed)
		if err != nil {
			unreadable = append(unreadable, f.name)
			continue
		}
		*f.into = string(b)
	}
	if len(unreadable) > 0 {
		return s.Runtime, &UnreadableError{Fields: unreadable}
	}
	return s.Runtime, nil
}

// UnreadableError says which stored secrets (by their JSON names) the
// platform key cannot open: they were sealed with another
// KUBEBYON_SECRET_KEY. Load returns it with the rest of the settings and
// those secrets empty, so the admin settings page can say so and take new
// ones; everything else treats it as the error it is.
type UnreadableError struct {
	Fields []string
}

func (e *UnreadableError) Error() string {
	return fmt.Sprintf("decrypt runtime settings: %s sealed with another KUBEBYON_SECRET_KEY: restore that key, or enter them again in the admin settings", strings.Join(e.Fields, " and "))
}

// Save validates and stores the settings (q should be the transaction that
// also writes the audit event).
func Save(ctx context.Context, q *queries.Queries, box *secrets.Box, r Runtime) error {
	if err := r.Validate(); err != nil {
		return err
	}
	s := stored{Runtime: r}
	if r.HostKubeconfig != "" {
		s.HostKubeconfigSealed = box.Seal([]byte(r.HostKubeconfig))
	}
	if r.PlatformAccessKey != "" {
		s.PlatformAccessKeySealed = box.Seal([]byte(r.PlatformAccessKey))
	}
	b, err := json.Marshal(s)
	if err != nil {
		return fmt.Errorf("encode runtime settings: %w", err)
	}
	if err := q.SettingUpsert(ctx, queries.SettingUpsertParams{Key: RuntimeKey, Value: b, Secret: true}); err != nil {
		return fmt.Errorf("store runtime settings: %w", err)
	}
	return nil
}

// FieldErrors maps setting fields to catalog message IDs.
type FieldErrors = input.Errors

// Validate checks every field.
func (r *Runtime) Validate() error {
	errs := FieldErrors{}
	if r.HostKubeconfig != "" {
		if !SelfContained([]byte(r.HostKubeconfig)) {
			errs["hostKubeconfig"] = "ErrAdminSettingsKubeconfigExternal"
		} else if _, err := clientcmd.RESTConfigFromKubeConfig([]byte(r.HostKubeconfig)); err != nil {
			errs["hostKubeconfig"] = "ErrSettingKubeconfig"
		}
	}
	if r.ChartPath == "" {
		if u, err := url.Parse(r.ChartRepo); err != nil || (u.Scheme != "https" && u.Scheme != "http" && u.Scheme != "oci") || u.Host == "" {
			errs["chartRepo"] = "ErrSettingChartRepo"
		}
		if strings.TrimSpace(r.ChartVersion) == "" {
			errs["chartVersion"] = "ErrSettingRequired"
		}
	} else if fi, err := os.Stat(r.ChartPath); err != nil || !fi.IsDir() {
		errs["chartPath"] = "ErrSettingChartPath"
	}
	if r.PlatformHost != "" {
		if strings.Contains(r.PlatformHost, "/") || strings.ContainsAny(r.PlatformHost, " \t") {
			errs["platformHost"] = "ErrSettingPlatformHost"
		}
	}
	if r.DefaultAccessMode != AccessNodePort && r.DefaultAccessMode != AccessLoadBalancer {
		errs["defaultAccessMode"] = "ErrSettingAccessMode"
	}
	if r.EdgeAddressType != AddressInternalIP && r.EdgeAddressType != AddressExternalIP {
		errs["edgeAddressType"] = "ErrSettingEdgeAddressType"
	}
	if r.APIBaseDomain != "" && len(validation.IsDNS1123Subdomain(r.APIBaseDomain)) > 0 {
		errs["apiBaseDomain"] = "ErrSettingDomain"
	}
	if r.ConsoleHost != "" {
		host := strings.ToLower(r.ConsoleHost)
		switch {
		case len(validation.IsDNS1123Subdomain(host)) > 0:
			errs["consoleHost"] = "ErrSettingDomain"
		case r.APIBaseDomain != "" && strings.HasSuffix(host, "."+r.APIBaseDomain):
			// A cluster's name could be the same.
			errs["consoleHost"] = "ErrSettingConsoleHostUnderAPI"
		}
		if !validBackend(r.ConsoleBackend) {
			errs["consoleBackend"] = "ErrSettingConsoleBackend"
		}
	} else if r.ConsoleBackend != "" && !validBackend(r.ConsoleBackend) {
		errs["consoleBackend"] = "ErrSettingConsoleBackend"
	}
	for field, cidr := range map[string]string{"podCIDR": r.PodCIDR, "serviceCIDR": r.ServiceCIDR} {
		if _, _, err := net.ParseCIDR(cidr); err != nil {
			errs[field] = "ErrSettingCIDR"
		}
	}
	if field, msg := r.podPoolError(); field != "" {
		errs[field] = msg
	}
	if len(r.AllowedVersions) == 0 {
		errs["allowedVersions"] = "ErrSettingVersions"
	}
	for _, v := range r.AllowedVersions {
		if !validVersion(v) {
			errs["allowedVersions"] = "ErrSettingVersions"
		}
	}
	if r.NodePortMin < 1 || r.NodePortMax > 65535 || r.NodePortMin > r.NodePortMax {
		errs["nodePortRange"] = "ErrSettingNodePorts"
	}
	if !slices.Contains(Backends, r.Backend) {
		errs["backend"] = "ErrSettingBackend"
	}
	if r.KamajiDataStore != "" && len(validation.IsDNS1123Subdomain(r.KamajiDataStore)) > 0 {
		errs["kamajiDataStore"] = "ErrSettingKamajiDataStore"
	}
	if r.PublicAPIPort < 1 || r.PublicAPIPort > 65535 {
		errs["publicAPIPort"] = "ErrSettingPublicAPIPort"
	}
	if r.PackageMirror != "" {
		if u, err := url.Parse(r.PackageMirror); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" || strings.ContainsAny(r.PackageMirror, " '\"\\$`") {
			errs["packageMirror"] = "ErrSettingPackageMirror"
		}
	}
	if len(errs) > 0 {
		return errs
	}
	return nil
}

// validBackend accepts host:port, the host an IP address or a DNS name.
func validBackend(s string) bool {
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		return false
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 1 || n > 65535 {
		return false
	}
	return net.ParseIP(host) != nil || len(validation.IsDNS1123Subdomain(host)) == 0
}

// validVersion accepts vX.Y.Z.
func validVersion(v string) bool {
	parts := strings.Split(strings.TrimPrefix(v, "v"), ".")
	if !strings.HasPrefix(v, "v") || len(parts) != 3 {
		return false
	}
	for _, p := range parts {
		if p == "" || strings.Trim(p, "0123456789") != "" {
			return false
		}
	}
	return true
}

// VersionAllowed reports whether users may pick v.
func (r Runtime) VersionAllowed(v string) bool { return slices.Contains(r.AllowedVersions, v) }

// Licensed reports whether a vCluster Platform connection is set: its
// license is what private nodes (the vcluster-pro image) need.
func (r Runtime) Licensed() bool { return r.PlatformAccessKey != "" }

// ErrNoHostCluster says no host cluster is configured.
var ErrNoHostCluster = errors.New("no host cluster is configured")

// SelfContained reports whether a kubeconfig carries its credentials in
// itself. A kubeconfig the platform is given (an admin's upload, a virtual
// cluster's Secret) must not make it run programs (exec plugins, auth
// providers) or read files on its machine: that would hand a shell there
// to whoever wrote it. One that does not parse is left to the parsing.
func SelfContained(kubeconfig []byte) bool {
	cfg, err := clientcmd.Load(kubeconfig)
	if err != nil {
		return true
	}
	for _, a := range cfg.AuthInfos {
		if a.Exec != nil || a.AuthProvider != nil || a.ClientCertificate != "" || a.ClientKey != "" || a.TokenFile != "" {
			return false
		}
	}
	for _, c := range cfg.Clusters {
		if c.CertificateAuthority != "" {
			return false
		}
	}
	return true
}

// HostConfig returns the host cluster's client configuration: the uploaded
// kubeconfig, else the file KUBEBYON_KUBECONFIG names, else in-cluster.
func (r Runtime) HostConfig(kubeconfigPath string) (*rest.Config, error) {
	switch {
	case r.HostKubeconfig != "":
		cfg, err := clientcmd.RESTConfigFromKubeConfig([]byte(r.HostKubeconfig))
		if err != nil {
			return nil, fmt.Errorf("host kubeconfig from settings: %w", err)
		}
		return cfg, nil
	case kubeconfigPath != "":
		cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfigPath)
		if err != nil {
			return nil, fmt.Errorf("host kubeconfig %s: %w", kubeconfigPath, err)
		}
		return cfg, nil
	}
	cfg, err := rest.InClusterConfig()
	if errors.Is(err, rest.ErrNotInCluster) {
		return nil, ErrNoHostCluster
	}
	if err != nil {
		return nil, fmt.Errorf("in-cluster config: %w", err)
	}
	return cfg, nil
}

// Endpoint is a cluster's stable public API host.
func (r Runtime) Endpoint(slug string) string {
	return slug + "." + r.APIBaseDomain
}

// DomainsOverlap reports whether two base domains are the same or one is
// under the other: the API's and the apps' may not, or the host names of
// one would be taken for the other's.
func DomainsOverlap(a, b string) bool {
	a, b = strings.ToLower(strings.TrimSuffix(a, ".")), strings.ToLower(strings.TrimSuffix(b, "."))
	if a == "" || b == "" {
		return false
	}
	return a == b || strings.HasSuffix(a, "."+b) || strings.HasSuffix(b, "."+a)
}

// StoredAPIBaseDomain is the API base domain as stored, read without
// opening the secrets stored beside it.
func StoredAPIBaseDomain(ctx context.Context, q *queries.Queries) (string, error) {
	row, err := q.SettingGet(ctx, RuntimeKey)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("load runtime settings: %w", err)
	}
	var s struct {
		APIBaseDomain string `json:"apiBaseDomain"`
	}
	if err := json.Unmarshal(row.Value, &s); err != nil {
		return "", fmt.Errorf("decode runtime settings: %w", err)
	}
	return s.APIBaseDomain, nil
}

// PublicEndpoint is the address users and nodes reach a cluster's API
// at: its host, with the public API port unless that is 443.
func (r Runtime) PublicEndpoint(slug string) string {
	if r.PublicAPIPort == 0 || r.PublicAPIPort == 443 {
		return r.Endpoint(slug)
	}
	return net.JoinHostPort(r.Endpoint(slug), strconv.Itoa(r.PublicAPIPort))
}

// EdgeAddress is the address of a host node that the edge sends a NodePort
// cluster's connections to: its InternalIP or ExternalIP, as the admin
// chose ("" when it has none of that type).
func (r Runtime) EdgeAddress(internalIP, externalIP string) string {
	if r.EdgeAddressType == AddressExternalIP {
		return externalIP
	}
	return internalIP
}

// APIPort is the public API port (443 unless set).
func (r Runtime) APIPort() int {
	if r.PublicAPIPort == 0 {
		return 443
	}
	return r.PublicAPIPort
}

// MaxPodCIDRBlocks bounds the blocks of one pool (the allocation looks
// through them in order).
const MaxPodCIDRBlocks = 1 << 20

// PodPool is the pool of Pod networks and its block size; ok is false
// when no pool is set.
func (r Runtime) PodPool() (pool netip.Prefix, bits int, ok bool) {
	p, err := netip.ParsePrefix(r.PodCIDRPool)
	if r.PodCIDRPool == "" || err != nil {
		return netip.Prefix{}, 0, false
	}
	return p.Masked(), r.PodCIDRBlock, true
}

// podPoolError is the field and message of what is wrong with the pool
// settings, "" for none: an IPv4 network in CIDR notation with its host
// bits zero, blocks no larger than it and no smaller than /28, at most
// MaxPodCIDRBlocks of them, and no overlap with the service network.
func (r Runtime) podPoolError() (string, string) {
	if r.PodCIDRPool == "" {
		return "", ""
	}
	p, err := netip.ParsePrefix(r.PodCIDRPool)
	if err != nil || !p.Addr().Is4() || p.Masked() != p {
		return "podCIDRPool", "ErrSettingPodPool"
	}
	if r.PodCIDRBlock < p.Bits() || r.PodCIDRBlock > 28 || r.PodCIDRBlock-p.Bits() > 20 {
		return "podCIDRBlock", "ErrSettingPodBlock"
	}
	if svc, err := netip.ParsePrefix(r.ServiceCIDR); err == nil && svc.Overlaps(p) {
		return "podCIDRPool", "ErrSettingPodPoolOverlap"
	}
	return "", ""
}
