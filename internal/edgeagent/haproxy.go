// Package edgeagent is `kubebyon edge`, the program that runs the
// platform's public entry on an edge machine (or inside serve): HAProxy in
// front of every cluster's control plane, kept in step with the state the
// platform serves (Agent). It needs no database: it reaches the platform
// through Platform, with package edgewire's types.
//
// It renders the configuration that routes each cluster's API host name
// (<slug>.<API base domain>) to its apiserver on one port and to its
// konnectivity server on another, in TCP mode with TLS passed through (the
// control plane keeps its own certificate), by the name the client asks
// for in its TLS hello (SNI).
//
// A host name is looked up in a map file, one per port, not matched by
// an ACL per cluster: with 10,000 clusters a connection still costs one
// lookup. A name the map does not hold is refused.
package edgeagent

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/kubebyon/kubebyon/internal/edgewire"
)

// Config is what one HAProxy serves.
type Config struct {
	// Version names the desired state the config was rendered from.
	Version string
	// APIBind and KonnectivityBind are the addresses HAProxy listens on,
	// such as ":443" and ":8132".
	APIBind, KonnectivityBind string
	// Dir is the absolute directory the files are written to: haproxy.cfg
	// names its maps there.
	Dir string
	// AdminSocket is HAProxy's runtime API socket; Dir/admin.sock when
	// empty.
	AdminSocket string
	Routes      []edgewire.Route
	// Console is the console's route on the API port, if any.
	Console *edgewire.Console
}

// The files in Config.Dir.
const (
	ConfigFile          = "haproxy.cfg"
	APIMapFile          = "api.map"
	KonnectivityMapFile = "konnectivity.map"
	AdminSocketFile     = "admin.sock"
	apiBackendSuffix    = "_api"
	konnectivitySuffix  = "_konnectivity"
	// consoleBackend is the console's backend: no cluster's is named so.
	consoleBackend = "console"
	// A server named by a DNS name that does not resolve yet starts
	// without an address (and down) instead of stopping HAProxy.
	serverCheckDefaults  = "inter 5s fall 3 rise 2 init-addr libc,none"
	tlsHelloInspectDelay = "5s"
)

// Files are a rendered configuration: haproxy.cfg and its two maps.
type Files struct {
	Config, APIMap, KonnectivityMap []byte
}

// ErrInvalid is a route or setting HAProxy must not be given: a host name
// that is not a DNS name, a server address with characters a config line
// cannot hold, a port out of range.
var ErrInvalid = errors.New("invalid edge configuration")

// Render renders c. Routes come out in host name order whatever their
// order in c, so that the same state renders the same bytes.
func Render(c Config) (Files, error) {
	if !filepath.IsAbs(c.Dir) {
		return Files{}, fmt.Errorf("%w: directory %q is not absolute", ErrInvalid, c.Dir)
	}
	for _, b := range []string{c.APIBind, c.KonnectivityBind} {
		_, port, err := net.SplitHostPort(b)
		if n, perr := strconv.Atoi(port); err != nil || perr != nil || n < 1 || n > 65535 || strings.ContainsAny(b, " \t\r\n#") {
			return Files{}, fmt.Errorf("%w: bind address %q: use host:port or :port", ErrInvalid, b)
		}
	}
	routes := slices.Clone(c.Routes)
	slices.SortFunc(routes, func(a, b edgewire.Route) int { return strings.Compare(a.Host, b.Host) })
	seen := make(map[string]bool, len(routes))
	clusters := make(map[int64]bool, len(routes))
	for _, r := range routes {
		if errs := validation.IsDNS1123Subdomain(r.Host); len(errs) > 0 {
			return Files{}, fmt.Errorf("%w: host name %q of cluster %d: %s", ErrInvalid, r.Host, r.ClusterID, strings.Join(errs, "; "))
		}
		if seen[r.Host] {
			return Files{}, fmt.Errorf("%w: host name %q is routed twice", ErrInvalid, r.Host)
		}
		seen[r.Host] = true
		if clusters[r.ClusterID] {
			return Files{}, fmt.Errorf("%w: cluster %d has two host names", ErrInvalid, r.ClusterID)
		}
		clusters[r.ClusterID] = true
		for _, s := range slices.Concat(r.API, r.Konnectivity) {
			if err := checkServer(s); err != nil {
				return Files{}, fmt.Errorf("%w: cluster %d: %w", ErrInvalid, r.ClusterID, err)
			}
		}
	}

	if c.Console != nil {
		if errs := validation.IsDNS1123Subdomain(c.Console.Host); len(errs) > 0 {
			return Files{}, fmt.Errorf("%w: console host name %q: %s", ErrInvalid, c.Console.Host, strings.Join(errs, "; "))
		}
		if seen[c.Console.Host] {
			return Files{}, fmt.Errorf("%w: the console's host name %q is a cluster's", ErrInvalid, c.Console.Host)
		}
		for _, s := range c.Console.Servers {
			if err := checkServer(s); err != nil {
				return Files{}, fmt.Errorf("%w: console: %w", ErrInvalid, err)
			}
		}
	}

	var cfg, apiMap, konnMap bytes.Buffer
	apiMapPath := filepath.Join(c.Dir, APIMapFile)
	konnMapPath := filepath.Join(c.Dir, KonnectivityMapFile)
	if strings.Trim(c.Version, "0123456789abcdefghijklmnopqrstuvwxyz-") != "" {
		return Files{}, fmt.Errorf("%w: version %q: use lowercase letters, digits and dashes", ErrInvalid, c.Version)
	}
	adminSocket := c.AdminSocket
	if adminSocket == "" {
		adminSocket = filepath.Join(c.Dir, AdminSocketFile)
	}
	if !filepath.IsAbs(adminSocket) || strings.ContainsAny(adminSocket, " \t\r\n#") {
		return Files{}, fmt.Errorf("%w: admin socket %q: use an absolute path without spaces", ErrInvalid, adminSocket)
	}
	// The description names the version, which the runtime API shows
	// (show info): the edge reads it back to know a reload took.
	fmt.Fprintf(&cfg, `# Rendered by KubeBYON: changes here are overwritten.
global
    description %s
    stats socket %s mode 600 level admin expose-fd listeners

defaults
    mode tcp
    timeout connect 5s
    # Watches stay open for long.
    timeout client 1h
    timeout server 1h
    default-server %s

`, versionDescription(c.Version), adminSocket, serverCheckDefaults)
	frontend(&cfg, "api", c.APIBind, apiMapPath)
	frontend(&cfg, "konnectivity", c.KonnectivityBind, konnMapPath)
	if c.Console != nil {
		fmt.Fprintf(&apiMap, "%s %s\n", c.Console.Host, consoleBackend)
		backend(&cfg, consoleBackend, c.Console.Host, c.Console.Servers)
	}
	for _, r := range routes {
		name := "c" + strconv.FormatInt(r.ClusterID, 10)
		fmt.Fprintf(&apiMap, "%s %s%s\n", r.Host, name, apiBackendSuffix)
		fmt.Fprintf(&konnMap, "%s %s%s\n", r.Host, name, konnectivitySuffix)
		backend(&cfg, name+apiBackendSuffix, r.Host, r.API)
		backend(&cfg, name+konnectivitySuffix, r.Host, r.Konnectivity)
	}
	return Files{Config: cfg.Bytes(), APIMap: apiMap.Bytes(), KonnectivityMap: konnMap.Bytes()}, nil
}

// frontend writes a listener that passes each TLS connection to the
// backend its SNI names in mapPath, and refuses any other.
func frontend(w *bytes.Buffer, name, bind, mapPath string) {
	fmt.Fprintf(w, `frontend %s
    bind %s
    tcp-request inspect-delay %s
    tcp-request content reject unless { req.ssl_hello_type 1 }
    tcp-request content reject unless { req.ssl_sni,lower,map(%s) -m found }
    use_backend %%[req.ssl_sni,lower,map(%s)]

`, name, bind, tlsHelloInspectDelay, mapPath, mapPath)
}

// backend writes a cluster's backend: its servers, each health-checked.
func backend(w *bytes.Buffer, name, host string, servers []edgewire.Server) {
	fmt.Fprintf(w, "backend %s\n    # %s\n    balance leastconn\n", name, host)
	for i, s := range servers {
		fmt.Fprintf(w, "    server s%d %s check\n", i, net.JoinHostPort(s.Address, strconv.Itoa(s.Port)))
	}
	w.WriteString("\n")
}

// checkServer accepts an IP address or a DNS name, and a port.
func checkServer(s edgewire.Server) error {
	if s.Port < 1 || s.Port > 65535 {
		return fmt.Errorf("server %s: port %d is out of range", s.Address, s.Port)
	}
	if net.ParseIP(s.Address) == nil && len(validation.IsDNS1123Subdomain(s.Address)) > 0 {
		return fmt.Errorf("server %q is neither an IP address nor a DNS name", s.Address)
	}
	return nil
}

// versionDescription is the description HAProxy gets for a version: the
// version, or "none" for the empty one (before any state).
func versionDescription(v string) string {
	if v == "" {
		return "none"
	}
	return v
}

// Write writes f into dir (Config.Dir), each file replaced whole (written
// aside, then renamed over the old one), maps first: a HAProxy reading
// the config meanwhile finds either the old files or the new ones.
func (f Files) Write(dir string) error {
	for _, file := range []struct {
		name string
		data []byte
	}{{APIMapFile, f.APIMap}, {KonnectivityMapFile, f.KonnectivityMap}, {ConfigFile, f.Config}} {
		if err := writeReplace(filepath.Join(dir, file.name), file.data); err != nil {
			return err
		}
	}
	return nil
}

func writeReplace(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer os.Remove(tmp.Name()) // after a failure; gone after the rename
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// Check asks HAProxy (the binary at haproxy) whether the config in dir is
// valid (haproxy -c), and returns its complaint as the error when not.
func Check(ctx context.Context, haproxy, dir string) error {
	out, err := exec.CommandContext(ctx, haproxy, "-c", "-f", filepath.Join(dir, ConfigFile)).CombinedOutput()
	if err != nil {
		var alerts []string
		for _, line := range strings.Split(string(out), "\n") {
			if strings.Contains(line, "[ALERT]") {
				alerts = append(alerts, strings.TrimSpace(line[strings.Index(line, ":")+1:]))
			}
		}
		if len(alerts) == 0 {
			alerts = []string{strings.TrimSpace(string(out)), err.Error()}
		}
		return fmt.Errorf("haproxy refuses the configuration: %s", strings.Join(alerts, "; "))
	}
	return nil
}
