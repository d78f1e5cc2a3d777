package testenv

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authorizationv1 "k8s.io/api/authorization/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// What a joining machine does in a virtual cluster, for the tests that
// join nodes: it authenticates with its bootstrap token and files its
// kubelet client CSR, which kubeadm's binding lets bootstrap tokens do.

// TokenClient is a client of k that authenticates with a bearer token,
// as a joining machine's kubelet does with its bootstrap token.
func (k *Kube) TokenClient(t testing.TB, token string) kubernetes.Interface {
	t.Helper()
	kc, err := kubernetes.NewForConfig(&rest.Config{Host: k.URL, BearerToken: token, TLSClientConfig: rest.TLSClientConfig{CAData: k.CA}})
	require.NoError(t, err)
	return kc
}

// AnonymousClient is a client of k that sends no credentials, as
// kubeadm's discovery does when it reads cluster-info.
func AnonymousClient(t testing.TB, k *Kube) kubernetes.Interface {
	t.Helper()
	kc, err := kubernetes.NewForConfig(&rest.Config{Host: k.URL, TLSClientConfig: rest.TLSClientConfig{CAData: k.CA}})
	require.NoError(t, err)
	return kc
}

// FileNodeCSR files a kubelet client CSR for node, as kubelet does.
func FileNodeCSR(t testing.TB, kc kubernetes.Interface, node string) error {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{
		Subject: pkix.Name{CommonName: "system:node:" + node, Organization: []string{"system:nodes"}},
	}, key)
	require.NoError(t, err)
	_, err = kc.CertificatesV1().CertificateSigningRequests().Create(context.Background(), &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "node-csr-"},
		Spec: certificatesv1.CertificateSigningRequestSpec{
			Request:    pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}),
			SignerName: certificatesv1.KubeAPIServerClientKubeletSignerName,
			Usages:     []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth},
		},
	}, metav1.CreateOptions{})
	return err
}

// KubeadmBootstrapBinding creates kubeadm's binding in k: the bootstrap
// tokens' group may file node CSRs. The apiserver's RBAC authorizer learns
// of the binding from a watch, and under load a CSR filed at once could
// still be forbidden: it returns once the apiserver answers that the group
// may file one.
func (k *Kube) KubeadmBootstrapBinding(t testing.TB, group string) {
	t.Helper()
	_, err := k.Client(t).RbacV1().ClusterRoleBindings().Create(context.Background(), &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "kubeadm:kubelet-bootstrap"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "system:node-bootstrapper"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.GroupKind, Name: group}},
	}, metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) { // the platform made it (kubeadm.Ensure)
		require.NoError(t, err)
	}
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		review, err := k.Client(t).AuthorizationV1().SubjectAccessReviews().Create(context.Background(), &authorizationv1.SubjectAccessReview{
			Spec: authorizationv1.SubjectAccessReviewSpec{
				User: "system:bootstrap:probe", Groups: []string{group, "system:authenticated"},
				ResourceAttributes: &authorizationv1.ResourceAttributes{
					Group: certificatesv1.GroupName, Resource: "certificatesigningrequests", Verb: "create",
				},
			},
		}, metav1.CreateOptions{})
		if assert.NoError(c, err) {
			assert.True(c, review.Status.Allowed, "bootstrap tokens may file CSRs")
		}
	}, 30*time.Second, 100*time.Millisecond)
}
