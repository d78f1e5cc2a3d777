package config

import (
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"os"
	"os/exec"
	"strconv"
	"strings"
)

// Edge is the start-up settings of `kubebyon edge`, which needs no
// database and no secret key: the platform's URL and an edge token.
type Edge struct {
	PlatformURL string
	// Token comes from the environment or a file, never a flag (a flag
	// shows in the process list).
	Token     string
	TokenFile string
	Name      string
	Dir       string
	HAProxy   string
	// APIListen and KonnectivityListen are where HAProxy listens.
	APIListen          string
	KonnectivityListen string
	// MasterSocket names an HAProxy already running (master-worker mode);
	// empty, the edge runs HAProxy itself.
	MasterSocket string
	LogLevel     string
	LogFormat    string
}

var (
	settingEdgePlatformURL  = setting{"KUBEBYON_EDGE_PLATFORM_URL", "platform-url"}
	settingEdgeToken        = setting{"KUBEBYON_EDGE_TOKEN", ""}
	settingEdgeTokenFile    = setting{"KUBEBYON_EDGE_TOKEN_FILE", "token-file"}
	settingEdgeName         = setting{"KUBEBYON_EDGE_NAME", "name"}
	settingEdgeDir          = setting{"KUBEBYON_EDGE_DIR", "dir"}
	settingEdgeHAProxy      = setting{"KUBEBYON_EDGE_HAPROXY", "haproxy"}
	settingEdgeAPIListen    = setting{"KUBEBYON_EDGE_API_LISTEN", "api-listen"}
	settingEdgeKonnListen   = setting{"KUBEBYON_EDGE_KONNECTIVITY_LISTEN", "konnectivity-listen"}
	settingEdgeMasterSocket = setting{"KUBEBYON_EDGE_MASTER_SOCKET", "master-socket"}
	settingServeEdge        = setting{"KUBEBYON_EDGE", "edge"}
)

// Defaults of `kubebyon edge`.
const (
	DefaultEdgeDir                = "/var/lib/kubebyon-edge"
	DefaultEdgeAPIListen          = ":443"
	DefaultEdgeKonnectivityListen = ":8132"
)

// RegisterEdge registers the edge's flags on fs, with defaults from the
// environment.
func RegisterEdge(fs *flag.FlagSet, getenv Getenv) *Edge {
	e := &Edge{Token: getenv(settingEdgeToken.env)}
	host, _ := os.Hostname()
	fs.StringVar(&e.PlatformURL, settingEdgePlatformURL.flag, envOr(getenv, settingEdgePlatformURL, ""), "the platform's URL, such as https://kubebyon.example.com (env KUBEBYON_EDGE_PLATFORM_URL)")
	fs.StringVar(&e.TokenFile, settingEdgeTokenFile.flag, envOr(getenv, settingEdgeTokenFile, ""), "a file holding the edge token (env KUBEBYON_EDGE_TOKEN_FILE; or the token itself in KUBEBYON_EDGE_TOKEN)")
	fs.StringVar(&e.Name, settingEdgeName.flag, envOr(getenv, settingEdgeName, host), "this edge's name in the admin area (env KUBEBYON_EDGE_NAME)")
	fs.StringVar(&e.Dir, settingEdgeDir.flag, envOr(getenv, settingEdgeDir, DefaultEdgeDir), "where HAProxy's config is written (env KUBEBYON_EDGE_DIR)")
	fs.StringVar(&e.HAProxy, settingEdgeHAProxy.flag, envOr(getenv, settingEdgeHAProxy, "haproxy"), "the haproxy binary (env KUBEBYON_EDGE_HAPROXY)")
	fs.StringVar(&e.APIListen, settingEdgeAPIListen.flag, envOr(getenv, settingEdgeAPIListen, DefaultEdgeAPIListen), "where HAProxy takes clusters' API connections (env KUBEBYON_EDGE_API_LISTEN)")
	fs.StringVar(&e.KonnectivityListen, settingEdgeKonnListen.flag, envOr(getenv, settingEdgeKonnListen, DefaultEdgeKonnectivityListen), "where HAProxy takes konnectivity connections (env KUBEBYON_EDGE_KONNECTIVITY_LISTEN)")
	fs.StringVar(&e.MasterSocket, settingEdgeMasterSocket.flag, envOr(getenv, settingEdgeMasterSocket, ""), "the master socket of an HAProxy run by someone else (-W -S) on <dir>/haproxy.cfg; empty: the edge runs HAProxy (env KUBEBYON_EDGE_MASTER_SOCKET)")
	fs.StringVar(&e.LogLevel, settingLogLevel.flag, envOr(getenv, settingLogLevel, DefaultLogLevel), "debug, info, warn or error (env KUBEBYON_LOG_LEVEL)")
	fs.StringVar(&e.LogFormat, settingLogFormat.flag, envOr(getenv, settingLogFormat, DefaultLogFormat), "text or json (env KUBEBYON_LOG_FORMAT)")
	return e
}

// Validate checks the edge settings and reads the token file.
func (e *Edge) Validate() error {
	u, err := url.Parse(e.PlatformURL)
	if e.PlatformURL == "" || err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%s is %q: use the platform's URL, such as https://kubebyon.example.com", settingEdgePlatformURL, e.PlatformURL)
	}
	if e.TokenFile != "" {
		b, err := os.ReadFile(e.TokenFile)
		if err != nil {
			return fmt.Errorf("%s: %w", settingEdgeTokenFile, unwrapPath(err))
		}
		e.Token = strings.TrimSpace(string(b))
	}
	if e.Token == "" {
		return fmt.Errorf("no edge token: set %s, or %s naming a file that holds it (an admin creates one under Admin → Edge)", settingEdgeToken.env, settingEdgeTokenFile)
	}
	if strings.TrimSpace(e.Name) == "" {
		return fmt.Errorf("%s is empty: name this edge", settingEdgeName)
	}
	if err := validateEdgeListens(e.APIListen, e.KonnectivityListen); err != nil {
		return err
	}
	if e.MasterSocket == "" {
		path, err := lookHAProxy(e.HAProxy)
		if err != nil {
			return err
		}
		e.HAProxy = path
	}
	if err := os.MkdirAll(e.Dir, 0o700); err != nil {
		return fmt.Errorf("%s %q: %w", settingEdgeDir, e.Dir, unwrapPath(err))
	}
	return e.logSettings().validateLog()
}

func (e *Edge) logSettings() *Common { return &Common{LogLevel: e.LogLevel, LogFormat: e.LogFormat} }

// Logger builds the edge's logger from its log settings.
func (e *Edge) Logger(w io.Writer) *slog.Logger { return e.logSettings().Logger(w) }

// validateEdgeListens checks HAProxy's two listen addresses.
func validateEdgeListens(api, konnectivity string) error {
	for _, l := range []struct {
		s    setting
		addr string
	}{{settingEdgeAPIListen, api}, {settingEdgeKonnListen, konnectivity}} {
		_, port, err := net.SplitHostPort(l.addr)
		if n, perr := strconv.Atoi(port); err != nil || perr != nil || n < 1 || n > 65535 {
			return fmt.Errorf("%s is %q: use host:port or :port, such as :443", l.s, l.addr)
		}
	}
	return nil
}

// lookHAProxy finds the haproxy binary.
func lookHAProxy(name string) (string, error) {
	path, err := exec.LookPath(name)
	if err != nil {
		return "", fmt.Errorf("%s is %q, which is not an executable: install HAProxy (Debian: apt install haproxy) or name its binary", settingEdgeHAProxy, name)
	}
	return path, nil
}
