// Package clusteraccess gives each member of an organization their own
// access to a cluster's virtual control plane: a ServiceAccount per member,
// bound to the ClusterRole of the member's access level, and short-lived
// tokens minted for it with the TokenRequest API. Removing the member
// deletes the ServiceAccount, which the apiserver takes as the end of every
// token minted for it, so access ends in the virtual cluster itself rather
// than by trusting that a downloaded kubeconfig expires.
//
// A member with Admin access can do anything in the virtual cluster,
// including making credentials the platform does not know of (another
// ServiceAccount and its token); no revocation in the cluster can reach
// those. What this package does guarantee is that the member's own
// ServiceAccount holds the rights of its level and no other.
package clusteraccess

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	rbacv1ac "k8s.io/client-go/applyconfigurations/rbac/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
)

// Level is what a member may do in a virtual cluster; its value is the
// name of the built-in ClusterRole it binds.
type Level string

// The access levels: owners, admins and members of an organization get
// Admin, viewers get View.
const (
	Admin Level = "cluster-admin"
	// View reads most objects but not Secrets, nor anything that reveals
	// them (the view ClusterRole's own rule).
	View Level = "view"
)

// Names of what Grant makes in the virtual cluster.
const (
	// Namespace holds the members' ServiceAccounts.
	Namespace = "kubebyon-access"
	// ManagedByLabel marks what the platform made, for people who look
	// at the virtual cluster.
	ManagedByLabel = "app.kubernetes.io/managed-by"
	// UserIDLabel is the platform user id of a member's ServiceAccount and
	// ClusterRoleBinding.
	UserIDLabel = "kubebyon.io/user-id"
	// EmailAnnotation is the member's email on their ServiceAccount, so
	// that whoever reads the cluster's audit log knows who member-42 is.
	EmailAnnotation = "kubebyon.io/email"
)

// MinTTL is the shortest lifetime the TokenRequest API grants a token.
const MinTTL = 10 * time.Minute

const fieldManager = "kubebyon"

// Member is the person a token is for.
type Member struct {
	// UserID is the platform user's id; it names the ServiceAccount.
	UserID int64
	// Email is shown on the ServiceAccount for humans; it may change
	// between grants.
	Email string
}

// ServiceAccountName is the name of a member's ServiceAccount in Namespace.
func ServiceAccountName(userID int64) string {
	return "member-" + strconv.FormatInt(userID, 10)
}

// BindingName is the name of the ClusterRoleBinding that gives a member's
// ServiceAccount its level.
func BindingName(userID int64) string {
	return "kubebyon:" + ServiceAccountName(userID)
}

// Grant gives a member the rights of level in the virtual cluster that
// client reaches and returns a new token for them, valid for ttl (at least
// MinTTL) or until the apiserver's own maximum, whichever comes first:
// expires is the apiserver's answer. It can run any number of times: it
// makes what is missing (the namespace, the member's ServiceAccount, the
// binding to level's ClusterRole) and leaves exactly one binding for the
// ServiceAccount, so a lower level takes the higher rights from every
// token of the member, the earlier ones included. Earlier tokens stay
// valid otherwise; Revoke ends them.
//
// The apiserver's RBAC authorizer learns of a changed binding through a
// watch, so rights may take a moment (milliseconds, usually) to follow.
func Grant(ctx context.Context, client kubernetes.Interface, member Member, level Level, ttl time.Duration) (token string, expires time.Time, err error) {
	if member.UserID <= 0 {
		return "", time.Time{}, fmt.Errorf("grant cluster access: invalid user id %d", member.UserID)
	}
	if level != Admin && level != View {
		return "", time.Time{}, fmt.Errorf("grant cluster access to user %d: unknown level %q", member.UserID, level)
	}
	if ttl < MinTTL {
		return "", time.Time{}, fmt.Errorf("grant cluster access to user %d: token lifetime %s is shorter than the TokenRequest API's minimum of %s", member.UserID, ttl, MinTTL)
	}
	sa := ServiceAccountName(member.UserID)
	labels := map[string]string{ManagedByLabel: fieldManager, UserIDLabel: strconv.FormatInt(member.UserID, 10)}

	ns := corev1ac.Namespace(Namespace).WithLabels(map[string]string{ManagedByLabel: fieldManager})
	if _, err := client.CoreV1().Namespaces().Apply(ctx, ns, metav1.ApplyOptions{FieldManager: fieldManager, Force: true}); err != nil {
		return "", time.Time{}, fmt.Errorf("apply namespace %s: %w", Namespace, err)
	}
	account := corev1ac.ServiceAccount(sa, Namespace).
		WithLabels(labels).
		WithAnnotations(map[string]string{EmailAnnotation: member.Email})
	if _, err := client.CoreV1().ServiceAccounts(Namespace).Apply(ctx, account, metav1.ApplyOptions{FieldManager: fieldManager, Force: true}); err != nil {
		return "", time.Time{}, fmt.Errorf("apply service account %s/%s: %w", Namespace, sa, err)
	}
	if err := applyBinding(ctx, client, member.UserID, level, labels); err != nil {
		return "", time.Time{}, err
	}
	if err := unbindElsewhere(ctx, client, member.UserID); err != nil {
		return "", time.Time{}, err
	}

	seconds := int64(ttl / time.Second)
	req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &seconds}}
	resp, err := client.CoreV1().ServiceAccounts(Namespace).CreateToken(ctx, sa, req, metav1.CreateOptions{})
	if err != nil {
		return "", time.Time{}, fmt.Errorf("request a token for service account %s/%s: %w", Namespace, sa, err)
	}
	return resp.Status.Token, resp.Status.ExpirationTimestamp.Time, nil
}

// applyBinding makes the member's ClusterRoleBinding name level's
// ClusterRole. A binding's roleRef cannot change, so a binding to another
// role is deleted first; a concurrent Grant can recreate it between the
// delete and the apply, which the apiserver refuses as invalid, and the
// loop then starts over from what is there.
func applyBinding(ctx context.Context, client kubernetes.Interface, userID int64, level Level, labels map[string]string) error {
	name := BindingName(userID)
	roleRef := rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: string(level)}
	binding := rbacv1ac.ClusterRoleBinding(name).
		WithLabels(labels).
		WithRoleRef(rbacv1ac.RoleRef().WithAPIGroup(roleRef.APIGroup).WithKind(roleRef.Kind).WithName(roleRef.Name)).
		WithSubjects(rbacv1ac.Subject().WithKind(rbacv1.ServiceAccountKind).WithNamespace(Namespace).WithName(ServiceAccountName(userID)))
	bindings := client.RbacV1().ClusterRoleBindings()
	var err error
	for range 5 {
		var existing *rbacv1.ClusterRoleBinding
		existing, err = bindings.Get(ctx, name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			return fmt.Errorf("read cluster role binding %s: %w", name, err)
		case existing.RoleRef != roleRef:
			uid := existing.UID
			err = bindings.Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
			if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
				return fmt.Errorf("delete cluster role binding %s to change its role: %w", name, err)
			}
		}
		_, err = bindings.Apply(ctx, binding, metav1.ApplyOptions{FieldManager: fieldManager, Force: true})
		if !apierrors.IsInvalid(err) {
			break
		}
	}
	if err != nil {
		return fmt.Errorf("apply cluster role binding %s to %s: %w", name, level, err)
	}
	return nil
}

// Revoke ends a member's access to the virtual cluster that client
// reaches. It deletes the member's bindings first, so that their rights
// end as soon as the RBAC authorizer sees it, then their ServiceAccount,
// which ends every token minted for it: the apiserver checks the
// ServiceAccount's UID on each request, though it may keep a token's
// successful authentication for up to ten seconds (its fixed token
// cache). What is already gone is not an error.
func Revoke(ctx context.Context, client kubernetes.Interface, userID int64) error {
	if userID <= 0 {
		return fmt.Errorf("revoke cluster access: invalid user id %d", userID)
	}
	name := BindingName(userID)
	err := client.RbacV1().ClusterRoleBindings().Delete(ctx, name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete cluster role binding %s: %w", name, err)
	}
	if err := unbindElsewhere(ctx, client, userID); err != nil {
		return err
	}
	sa := ServiceAccountName(userID)
	err = client.CoreV1().ServiceAccounts(Namespace).Delete(ctx, sa, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete service account %s/%s: %w", Namespace, sa, err)
	}
	return nil
}

// unbindElsewhere takes the member's ServiceAccount out of every binding
// other than BindingName(userID). With Admin access a member can bind
// their own ServiceAccount to any role; such a binding would outlive a
// lower level and, since bindings name a ServiceAccount and not its UID,
// even a Revoke followed by a new Grant. A binding that names only the
// member is deleted; from one that names others too, the member is
// removed. A binding changed meanwhile makes it start over.
func unbindElsewhere(ctx context.Context, client kubernetes.Interface, userID int64) error {
	sa := ServiceAccountName(userID)
	isMember := func(s rbacv1.Subject) bool {
		return s.Kind == rbacv1.ServiceAccountKind && s.Namespace == Namespace && s.Name == sa
	}
	crbs, rbs := client.RbacV1().ClusterRoleBindings(), client.RbacV1().RoleBindings(metav1.NamespaceAll)
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		list, err := crbs.List(ctx, metav1.ListOptions{})
		if err != nil {
			return fmt.Errorf("list cluster role bindings: %w", err)
		}
		for _, b := range list.Items {
			if b.Name == BindingName(userID) || !slices.ContainsFunc(b.Subjects, isMember) {
				continue
			}
			b.Subjects = slices.DeleteFunc(b.Subjects, isMember)
			if len(b.Subjects) == 0 {
				err = crbs.Delete(ctx, b.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{ResourceVersion: &b.ResourceVersion}})
			} else {
				_, err = crbs.Update(ctx, &b, metav1.UpdateOptions{FieldManager: fieldManager})
			}
			if err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("remove service account %s/%s from cluster role binding %s: %w", Namespace, sa, b.Name, err)
			}
		}
		nsList, err := rbs.List(ctx, metav1.ListOptions{})
		if err != nil {
			return fmt.Errorf("list role bindings: %w", err)
		}
		for _, b := range nsList.Items {
			if !slices.ContainsFunc(b.Subjects, isMember) {
				continue
			}
			b.Subjects = slices.DeleteFunc(b.Subjects, isMember)
			in := client.RbacV1().RoleBindings(b.Namespace)
			if len(b.Subjects) == 0 {
				err = in.Delete(ctx, b.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{ResourceVersion: &b.ResourceVersion}})
			} else {
				_, err = in.Update(ctx, &b, metav1.UpdateOptions{FieldManager: fieldManager})
			}
			if err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("remove service account %s/%s from role binding %s/%s: %w", Namespace, sa, b.Namespace, b.Name, err)
			}
		}
		return nil
	})
}
