// Command kube-proxy is Kubernetes' Service proxy, built from its Go modules
// so that the real-node tests reach Services (ClusterIPs, the kubernetes
// Service) from a node without downloading a binary.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
	_ "k8s.io/component-base/metrics/prometheus/version"
	"k8s.io/kubernetes/cmd/kube-proxy/app"
)

func main() {
	os.Exit(cli.Run(app.NewProxyCommand()))
}
