//go:build linux

package main

import (
	"errors"
	"flag"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/vishvananda/netlink"

	"github.com/kubebyon/kubebyon/internal/config"
	"github.com/kubebyon/kubebyon/internal/routeagent"
)

// routeAgent runs `kubebyon route-agent`: on every host node (the
// DaemonSet in deployments/route-agent), it keeps the node's routes to
// the tenant clusters' Pod networks, as the platform says.
func (c *cli) routeAgent(args []string) error {
	fs := flag.NewFlagSet("route-agent", flag.ContinueOnError)
	s := registerRouteAgent(fs, c.getenv)
	if err := c.parse(fs, args); err != nil {
		return err
	}
	if err := s.validate(); err != nil {
		return err
	}
	logger := s.log.Logger(c.stderr)
	// The network namespace the process runs in: the host's, with
	// hostNetwork.
	h, err := netlink.NewHandle()
	if err != nil {
		return fmt.Errorf("open a netlink socket: %w", err)
	}
	defer h.Close()
	ctx, cancel := signalContext()
	defer cancel()
	r := &routeagent.Runner{
		Platform: &routeagent.Remote{
			URL: s.platformURL, Token: s.token,
			Client: &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone(), Timeout: routeagent.MaxWait + time.Minute},
		},
		Node:   s.node,
		Agent:  &routeagent.Agent{Handle: h, Table: s.tableID, Logger: logger},
		Resync: s.resync,
		Logger: logger,
	}
	logger.Info("kubebyon route-agent", "version", version, "platform", s.platformURL, "node", s.node,
		"table", s.tableID, "protocol", int(routeagent.Protocol), "resync", s.resync)
	return r.Run(ctx)
}

// routeAgentSettings are the start-up settings of `kubebyon route-agent`.
// The platform's URL and the token are read as `kubebyon edge` reads them.
type routeAgentSettings struct {
	platformURL string
	// token comes from the environment or a file, never a flag (a flag
	// shows in the process list).
	token, tokenFile string
	node             string
	table, resyncRaw string
	log              config.Common

	tableID int
	resync  time.Duration
}

const (
	envPlatformURL = "KUBEBYON_EDGE_PLATFORM_URL"
	envEdgeToken   = "KUBEBYON_EDGE_TOKEN"
	envTokenFile   = "KUBEBYON_EDGE_TOKEN_FILE"
	envNodeName    = "NODE_NAME"
	envRouteTable  = "KUBEBYON_ROUTE_AGENT_TABLE"
	envRouteResync = "KUBEBYON_ROUTE_AGENT_RESYNC"
	envLogLevel    = "KUBEBYON_LOG_LEVEL"
	envLogFormat   = "KUBEBYON_LOG_FORMAT"
)

// registerRouteAgent registers the route agent's flags on fs, with
// defaults from the environment.
func registerRouteAgent(fs *flag.FlagSet, getenv config.Getenv) *routeAgentSettings {
	s := &routeAgentSettings{token: getenv(envEdgeToken)}
	or := func(env, def string) string {
		if v := getenv(env); v != "" {
			return v
		}
		return def
	}
	host, _ := os.Hostname()
	fs.StringVar(&s.platformURL, "platform-url", getenv(envPlatformURL), "the platform's URL, such as https://kubebyon.example.com (env "+envPlatformURL+")")
	fs.StringVar(&s.tokenFile, "token-file", getenv(envTokenFile), "a file holding the edge token (env "+envTokenFile+"; or the token itself in "+envEdgeToken+")")
	fs.StringVar(&s.node, "node-name", or(envNodeName, host), "this host node's name in the reports (env "+envNodeName+")")
	fs.StringVar(&s.table, "table", or(envRouteTable, "main"), "the routing table to keep: main or a number (env "+envRouteTable+")")
	fs.StringVar(&s.resyncRaw, "resync", or(envRouteResync, routeagent.DefaultResync.String()), "how often to converge the routes without a change, putting back those deleted behind the agent's back (env "+envRouteResync+")")
	fs.StringVar(&s.log.LogLevel, "log-level", or(envLogLevel, config.DefaultLogLevel), "debug, info, warn or error (env "+envLogLevel+")")
	fs.StringVar(&s.log.LogFormat, "log-format", or(envLogFormat, config.DefaultLogFormat), "text or json (env "+envLogFormat+")")
	return s
}

// validate checks the settings and reads the token file.
func (s *routeAgentSettings) validate() error {
	u, err := url.Parse(s.platformURL)
	if s.platformURL == "" || err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%s (--platform-url) is %q: use the platform's URL, such as https://kubebyon.example.com", envPlatformURL, s.platformURL)
	}
	if s.tokenFile != "" {
		b, err := os.ReadFile(s.tokenFile)
		if err != nil {
			return fmt.Errorf("%s (--token-file): %w", envTokenFile, unwrapPathError(err))
		}
		s.token = strings.TrimSpace(string(b))
	}
	if s.token == "" {
		return fmt.Errorf("no edge token: set %s, or %s naming a file that holds it (an admin creates one under Admin → Edge)", envEdgeToken, envTokenFile)
	}
	if strings.TrimSpace(s.node) == "" {
		return fmt.Errorf("%s (--node-name) is empty: name this host node", envNodeName)
	}
	if s.tableID, err = routeTable(s.table); err != nil {
		return fmt.Errorf("%s (--table) is %q: %w", envRouteTable, s.table, err)
	}
	if s.resync, err = time.ParseDuration(s.resyncRaw); err != nil || s.resync < time.Second {
		return fmt.Errorf("%s (--resync) is %q: use a duration of a second or more, such as 5m", envRouteResync, s.resyncRaw)
	}
	if _, err := s.log.Level(); err != nil {
		return err
	}
	if s.log.LogFormat != "text" && s.log.LogFormat != "json" {
		return fmt.Errorf("%s (--log-format) is %q: use text or json", envLogFormat, s.log.LogFormat)
	}
	return nil
}

// routeTable reads a routing table: main, or its number.
func routeTable(s string) (int, error) {
	if s == "main" {
		return syscall.RT_TABLE_MAIN, nil
	}
	n, err := strconv.ParseUint(s, 10, 32)
	if err != nil || n == 0 {
		return 0, fmt.Errorf("use main or a table number from 1 to %d", uint32(1<<32-1))
	}
	return int(n), nil
}

// unwrapPathError is "<path>: <cause>", without the operation.
func unwrapPathError(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return fmt.Errorf("%s: %w", pe.Path, pe.Err)
	}
	return err
}
