// Package vcluster installs, upgrades and removes a cluster's vcluster on
// the host cluster with Helm's Go SDK, with values built from vcluster's own
// config types, and reads back what the host reports.
package vcluster

import (
	"encoding/json"
	"fmt"
	"net"
	"strconv"

	vconfig "github.com/loft-sh/vcluster/config"

	"github.com/kubebyon/kubebyon/internal/settings"
	"github.com/kubebyon/kubebyon/queries"
)

// Namespace is the host namespace a cluster's control plane lives in.
func Namespace(c queries.Cluster) string { return "kubebyon-" + c.Slug }

// ReleaseName is the cluster's Helm release. The chart names the
// StatefulSet and Service after it, and the kubeconfig Secret vc-<release>.
func ReleaseName(c queries.Cluster) string { return c.Name }

// KubeconfigSecretName is the Secret vcluster writes its kubeconfig to.
func KubeconfigSecretName(c queries.Cluster) string { return "vc-" + ReleaseName(c) }

// PlatformSecretName is the Secret holding the vCluster Platform access
// key, which licenses private nodes.
const PlatformSecretName = "vcluster-platform-api-key"

// Values are the chart values for a cluster.
func Values(c queries.Cluster, rt settings.Runtime) (map[string]any, error) {
	endpoint := rt.Endpoint(c.Slug)
	var cfg vconfig.Config

	// Private nodes: users' own machines join the control plane. They only
	// work with the k8s distro, and need vcluster-pro with a license.
	cfg.PrivateNodes.Enabled = true
	cfg.ControlPlane.Distro.K8S.Enabled = true
	cfg.ControlPlane.Distro.K8S.Image.Tag = c.KubernetesVersion
	// The chart's own version fields are placeholders: name the release.
	cfg.ControlPlane.StatefulSet.Image.Tag = settings.VClusterVersion

	cfg.ControlPlane.Endpoint = net.JoinHostPort(endpoint, strconv.Itoa(rt.APIPort()))
	cfg.ControlPlane.Proxy.ExtraSANs = []string{endpoint}
	cfg.ExportKubeConfig.Server = "https://" + rt.PublicEndpoint(c.Slug)

	// The ports are listed here rather than left to the chart, so that no
	// NodePort is picked at random by the host: the platform allocates them
	// all (a random one could be the port it hands the next cluster).
	// The chart's kubelet proxy port is not exposed: private nodes run
	// their own kubelets.
	// The Service carries the cluster's id: the edge finds LoadBalancer
	// addresses by it (LoadBalancerAddresses).
	cfg.ControlPlane.Service.Labels = map[string]string{LabelClusterID: strconv.FormatInt(c.ID, 10)}
	switch c.PublicAccessMode {
	case settings.AccessNodePort:
		if !c.NodePort.Valid || !c.KonnectivityNodePort.Valid {
			return nil, fmt.Errorf("cluster %d is in nodeport mode without its node ports", c.ID)
		}
		cfg.ControlPlane.Service.Spec = map[string]any{"type": "NodePort", "ports": []any{
			map[string]any{"name": "https", "port": 443, "targetPort": 8443, "nodePort": c.NodePort.Int32, "protocol": "TCP"},
			map[string]any{"name": "konnectivity", "port": 8132, "targetPort": 8132, "nodePort": c.KonnectivityNodePort.Int32, "protocol": "TCP"},
		}}
		cfg.ControlPlane.Service.HTTPSNodePort = int(c.NodePort.Int32)
	case settings.AccessLoadBalancer:
		cfg.ControlPlane.Service.Spec = map[string]any{"type": "LoadBalancer", "allocateLoadBalancerNodePorts": false, "ports": []any{
			map[string]any{"name": "https", "port": 443, "targetPort": 8443, "protocol": "TCP"},
			map[string]any{"name": "konnectivity", "port": 8132, "targetPort": 8132, "protocol": "TCP"},
		}}
	default:
		return nil, fmt.Errorf("cluster %d: unknown access mode %q", c.ID, c.PublicAccessMode)
	}

	// Fixed when the cluster was made (clusters.Service.Create): a change
	// of the settings must not move a running cluster's pods.
	cfg.Networking.PodCIDR = rt.PodCIDR
	if c.PodCidr.IsValid() {
		cfg.Networking.PodCIDR = c.PodCidr.String()
	}
	cfg.Networking.ServiceCIDR = rt.ServiceCIDR

	if rt.PlatformAccessKey != "" {
		cfg.External = map[string]vconfig.ExternalConfig{
			"platform": {"apiKey": map[string]any{"secretName": PlatformSecretName}},
		}
	}

	raw, err := json.Marshal(cfg)
	if err != nil {
		return nil, fmt.Errorf("encode values: %w", err)
	}
	var values map[string]any
	if err := json.Unmarshal(raw, &values); err != nil {
		return nil, fmt.Errorf("decode values: %w", err)
	}
	prune(values)
	return values, nil
}

// prune drops the empty objects that encoding/json leaves for unset nested
// structs, so the values hold only what we set and the chart's defaults
// stay in charge of the rest.
func prune(m map[string]any) bool {
	for k, v := range m {
		if sub, ok := v.(map[string]any); ok && prune(sub) {
			delete(m, k)
		}
	}
	return len(m) == 0
}
