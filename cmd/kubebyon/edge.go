package main

import (
	"flag"
	"net/http"
	"time"

	"github.com/kubebyon/kubebyon/internal/config"
	"github.com/kubebyon/kubebyon/internal/edgeagent"
)

// edge runs `kubebyon edge`: beside HAProxy on an edge machine, it keeps
// HAProxy routing every cluster's API host name, as the platform says.
func (c *cli) edge(args []string) error {
	fs := flag.NewFlagSet("edge", flag.ContinueOnError)
	ecfg := config.RegisterEdge(fs, c.getenv)
	if err := c.parse(fs, args); err != nil {
		return err
	}
	if err := ecfg.Validate(); err != nil {
		return err
	}
	logger := ecfg.Logger(c.stderr)
	ctx, cancel := signalContext()
	defer cancel()
	a := &edgeagent.Agent{
		Platform: &edgeagent.Remote{
			URL: ecfg.PlatformURL, Token: ecfg.Token,
			Client: &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone(), Timeout: edgeagent.DefaultWait + time.Minute},
		},
		Name: ecfg.Name, Dir: ecfg.Dir,
		HAProxy: ecfg.HAProxy, APIBind: ecfg.APIListen, KonnectivityBind: ecfg.KonnectivityListen,
		MasterSocket: ecfg.MasterSocket,
		Logger:       logger,
	}
	logger.Info("kubebyon edge", "version", version, "platform", ecfg.PlatformURL, "name", ecfg.Name, "dir", ecfg.Dir,
		"api_listen", ecfg.APIListen, "konnectivity_listen", ecfg.KonnectivityListen)
	return a.Run(ctx)
}
