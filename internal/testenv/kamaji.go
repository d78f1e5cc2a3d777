package testenv

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
)

// The tests play Kamaji: its operator and its images are not available
// here (NODE-RUNTIME.md), so no real Kamaji runs. What stands in for it:
//   - KamajiCRD installs a CustomResourceDefinition of the same group,
//     version and kind, tenantcontrolplanes.kamaji.clastix.io/v1alpha1,
//     with a status subresource, but without Kamaji's schema: the fields
//     the platform writes are checked by the tests that read them back,
//     not by Kamaji's validation;
//   - the tests then write what Kamaji's controller would: the status
//     (version Ready, deployment replicas, the admin kubeconfig Secret's
//     name) and the <name>-admin-kubeconfig Secret with admin.conf, for a
//     control plane that is a real kube-apiserver (NewKube, or a whole
//     control plane with StartControlPlane for the real-node tests).

// KamajiCRD installs the TenantControlPlane CRD on k, once (tests of a
// package share the host apiserver), and returns when k serves it.
func KamajiCRD(t testing.TB, k *Kube) {
	t.Helper()
	ctx := context.Background()
	client, err := apiextensionsclient.NewForConfig(k.Config)
	require.NoError(t, err)
	preserve := true
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "tenantcontrolplanes.kamaji.clastix.io"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "kamaji.clastix.io",
			Names: apiextensionsv1.CustomResourceDefinitionNames{
				Plural: "tenantcontrolplanes", Singular: "tenantcontrolplane", Kind: "TenantControlPlane",
				ListKind: "TenantControlPlaneList", ShortNames: []string{"tcp"},
			},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1alpha1", Served: true, Storage: true,
				Subresources: &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}},
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object", XPreserveUnknownFields: &preserve,
				}},
			}},
		},
	}
	_, err = client.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, crd, metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) {
		require.NoError(t, err)
	}
	disco, err := discovery.NewDiscoveryClientForConfig(k.Config)
	require.NoError(t, err)
	err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		list, err := disco.ServerResourcesForGroupVersion("kamaji.clastix.io/v1alpha1")
		if err != nil {
			return false, nil //nolint:nilerr // not served yet
		}
		for _, r := range list.APIResources {
			if r.Name == "tenantcontrolplanes" {
				return true, nil
			}
		}
		return false, nil
	})
	require.NoError(t, err, "the TenantControlPlane CRD is served")
}
