package testenv

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
)

// gatewayAPIModule is the Gateway API release whose CRDs GatewayAPICRDs
// installs: its standard channel, where TLSRoute is v1 since v1.5.
const gatewayAPIModule = "sigs.k8s.io/gateway-api@v1.6.3"

// GatewayAPICRDs installs the Gateway API's standard-channel CRDs
// (config/crd/standard of its module in the Go module cache) and
// cert-manager's CRDs (deploy/crds of its module, the release of
// CertManagerChart) into the apiserver cfg points at, if they are not
// there yet, and waits until the apiserver serves them. Tests sharing an
// apiserver may call it at the same time.
func GatewayAPICRDs(t testing.TB, cfg *rest.Config) {
	t.Helper()
	GatewayAPIChannelCRDs(t, cfg, "standard")
}

// GatewayAPIChannelCRDs is GatewayAPICRDs with the Gateway API's CRDs of
// channel (standard or experimental: the same CRD names, so an apiserver
// has one channel's).
func GatewayAPIChannelCRDs(t testing.TB, cfg *rest.Config, channel string) {
	t.Helper()
	files, err := foundOnce("gateway api crds "+channel, func() (string, error) {
		gw, err := moduleDir(gatewayAPIModule)
		if err != nil {
			return "", err
		}
		cm, err := moduleDir(certManagerModule)
		if err != nil {
			return "", err
		}
		return filepath.Join(gw, "config", "crd", channel) + string(os.PathListSeparator) + filepath.Join(cm, "deploy", "crds"), nil
	})
	if err != nil {
		t.Fatalf("testenv: locate the Gateway API and cert-manager CRDs: %v", err)
	}
	client, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatalf("testenv: CRDs: dynamic client: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, dir := range filepath.SplitList(files) {
		paths, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
		if err != nil || len(paths) == 0 {
			t.Fatalf("testenv: no CRDs in %s: %v", dir, err)
		}
		for _, p := range paths {
			if err := installCRDFile(ctx, client, p); err != nil {
				t.Fatalf("testenv: CRDs: %v", err)
			}
		}
	}
}

// installCRDFile creates the CustomResourceDefinitions of a YAML file
// (others kinds in it are skipped) and waits until each is served.
func installCRDFile(ctx context.Context, client dynamic.Interface, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	dec := yaml.NewYAMLOrJSONDecoder(f, 4096)
	for {
		obj := &unstructured.Unstructured{}
		if err := dec.Decode(&obj.Object); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return fmt.Errorf("decode %s: %w", path, err)
		}
		if obj.GetKind() != "CustomResourceDefinition" {
			continue
		}
		if _, err := client.Resource(crdResource).Create(ctx, obj, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create %s: %w", obj.GetName(), err)
		}
		group, _, _ := unstructured.NestedString(obj.Object, "spec", "group")
		plural, _, _ := unstructured.NestedString(obj.Object, "spec", "names", "plural")
		versions, _, _ := unstructured.NestedSlice(obj.Object, "spec", "versions")
		version := ""
		for _, v := range versions {
			m, _ := v.(map[string]any)
			if storage, _ := m["storage"].(bool); storage {
				version, _ = m["name"].(string)
			}
		}
		if group == "" || plural == "" || version == "" || strings.Contains(plural, "/") {
			return fmt.Errorf("%s: no group, plural or storage version", obj.GetName())
		}
		if err := waitCRDServed(ctx, client, obj.GetName(), schema.GroupVersionResource{Group: group, Version: version, Resource: plural}); err != nil {
			return err
		}
	}
}
