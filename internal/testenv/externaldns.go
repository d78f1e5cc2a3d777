package testenv

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
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

// externalDNSModule is the external-dns release whose DNSEndpoint CRD
// ExternalDNSCRD installs, read from the Go module cache.
const externalDNSModule = "sigs.k8s.io/external-dns@v0.20.0"

// externalDNSCRDFile is the CRD's path in the module.
const externalDNSCRDFile = "config/crd/standard/dnsendpoints.externaldns.k8s.io.yaml"

const externalDNSCRDName = "dnsendpoints.externaldns.k8s.io"

var (
	crdResource         = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	dnsEndpointResource = schema.GroupVersionResource{Group: "externaldns.k8s.io", Version: "v1alpha1", Resource: "dnsendpoints"}
)

// ExternalDNSCRD installs external-dns's DNSEndpoint CRD
// (externaldns.k8s.io/v1alpha1, dnsendpoints) into the apiserver cfg
// points at, if it is not there yet, and waits until the apiserver serves
// it. Tests sharing an apiserver may call it at the same time.
//
// The CRD is read from external-dns's module in the Go module cache
// (downloaded if need be), or from the file $EXTERNAL_DNS_CRD names.
func ExternalDNSCRD(t testing.TB, cfg *rest.Config) {
	t.Helper()
	crd, err := externalDNSCRD()
	if err != nil {
		t.Fatalf("testenv: external-dns CRD: %v", err)
	}
	client, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatalf("testenv: external-dns CRD: dynamic client: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	crds := client.Resource(crdResource)
	if _, err := crds.Create(ctx, crd, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("testenv: external-dns CRD: create: %v", err)
	}
	if err := waitCRDServed(ctx, client, crd.GetName(), dnsEndpointResource); err != nil {
		t.Fatalf("testenv: external-dns CRD: %v", err)
	}
}

// externalDNSCRD reads the CRD from $EXTERNAL_DNS_CRD or the module cache.
func externalDNSCRD() (*unstructured.Unstructured, error) {
	path := os.Getenv("EXTERNAL_DNS_CRD")
	if path == "" {
		var err error
		if path, err = foundOnce(externalDNSModule, externalDNSCRDPath); err != nil {
			return nil, err
		}
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read: %w", err)
	}
	j, err := yaml.ToJSON(b)
	if err != nil {
		return nil, fmt.Errorf("decode %s: %w", path, err)
	}
	crd := &unstructured.Unstructured{}
	if err := crd.UnmarshalJSON(j); err != nil {
		return nil, fmt.Errorf("decode %s: %w", path, err)
	}
	if crd.GetKind() != "CustomResourceDefinition" || crd.GetName() != externalDNSCRDName {
		return nil, fmt.Errorf("%s is %s %q, not the CustomResourceDefinition %s", path, crd.GetKind(), crd.GetName(), externalDNSCRDName)
	}
	return crd, nil
}

// externalDNSCRDPath is the CRD's path in external-dns's module.
func externalDNSCRDPath() (string, error) {
	dir, err := moduleDir(externalDNSModule)
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, externalDNSCRDFile), nil
}

// moduleDir downloads module (path@version) into the Go module cache (a
// no-op when it is there; go verifies it against go.sum's checksum
// database) and returns its directory. It runs in an empty directory,
// outside any module, so that the repository's go.mod is neither read nor
// changed: the modules it fetches (charts, CRDs) are data, not code.
func moduleDir(module string) (string, error) {
	dir, err := os.MkdirTemp("", "kubebyon-gomod-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(dir)
	cmd := exec.Command("go", "mod", "download", "-json", module)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=", "GO111MODULE=on", "GOWORK=off")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("go mod download %s: %w: %s%s", module, err, out, stderr.String())
	}
	var mod struct {
		Dir   string
		Error string
	}
	if err := json.Unmarshal(out, &mod); err != nil {
		return "", fmt.Errorf("go mod download %s: %w: %s", module, err, out)
	}
	if mod.Error != "" || mod.Dir == "" {
		return "", fmt.Errorf("go mod download %s: no module directory: %s", module, mod.Error)
	}
	return mod.Dir, nil
}

// waitCRDServed waits until the CRD name is Established and a List of
// its resource gvr succeeds.
func waitCRDServed(ctx context.Context, client dynamic.Interface, name string, gvr schema.GroupVersionResource) error {
	var last error
	for {
		last = crdServed(ctx, client, name, gvr)
		if last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s not served: %w", name, last)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func crdServed(ctx context.Context, client dynamic.Interface, name string, gvr schema.GroupVersionResource) error {
	crd, err := client.Resource(crdResource).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("get: %w", err)
	}
	conditions, _, err := unstructured.NestedSlice(crd.Object, "status", "conditions")
	if err != nil {
		return fmt.Errorf("status: %w", err)
	}
	established := false
	for _, c := range conditions {
		if c, _ := c.(map[string]any); c["type"] == "Established" && c["status"] == "True" {
			established = true
		}
	}
	if !established {
		return fmt.Errorf("not Established: %v", conditions)
	}
	if _, err := client.Resource(gvr).List(ctx, metav1.ListOptions{Limit: 1}); err != nil {
		return fmt.Errorf("list %s: %w", gvr.Resource, err)
	}
	return nil
}
