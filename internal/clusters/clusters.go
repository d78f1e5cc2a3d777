// Package clusters is what users do with their clusters: create, change,
// delete and retry them (and admins with anyone's: list, retry, delete,
// admin.go; suspend and resume, suspend.go). Each action writes the row, a cluster event, the
// audit event and the ClusterReconcile job in one transaction; the job then
// does the work on the host cluster.
package clusters

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"maps"
	"math/big"
	"net/netip"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/kubebyon/kubebyon/internal/audit"
	"github.com/kubebyon/kubebyon/internal/checks"
	"github.com/kubebyon/kubebyon/internal/entitlements"
	"github.com/kubebyon/kubebyon/internal/input"
	"github.com/kubebyon/kubebyon/internal/orgs"
	"github.com/kubebyon/kubebyon/internal/secrets"
	"github.com/kubebyon/kubebyon/internal/settings"
	"github.com/kubebyon/kubebyon/queries"
)

// MaxNameLength keeps kubebyon-<name>-<suffix> within a namespace name.
const MaxNameLength = 40

// MaxDescriptionLength bounds the free-text description.
const MaxDescriptionLength = 500

// Errors users see (catalog message IDs).
var (
	ErrNotFound       = errors.New("ErrClusterNotFound")
	ErrNoHostCluster  = errors.New("ErrClusterNoHost")
	ErrNoBaseDomain   = errors.New("ErrClusterNoBaseDomain")
	ErrDeleting       = errors.New("ErrClusterDeleting")
	ErrNotFailed      = errors.New("ErrClusterNotFailed")
	ErrNoFreeNodePort = errors.New("ErrClusterNoNodePort")
	ErrPodPoolFull    = errors.New("ErrClusterPodPoolFull")
)

// FieldErrors maps form fields to catalog message IDs.
type FieldErrors = input.Errors

// Service carries what the cluster actions need.
type Service struct {
	Pool  *pgxpool.Pool
	River *river.Client[pgx.Tx]
	Box   *secrets.Box
	// KubeconfigPath is KUBEBYON_KUBECONFIG, one way to name the host cluster.
	KubeconfigPath string
}

// Input is the create and update form.
type Input struct {
	Name              string
	Description       string
	KubernetesVersion string
	PublicAccessMode  string
	// Backend is the control-plane backend, one the owner's plan allows
	// (empty: the first of them). Set at creation only.
	Backend string
}

// validate checks the input against the settings. On update the name is
// not checked (it cannot change).
func (in *Input) validate(rt settings.Runtime, create bool) error {
	errs := FieldErrors{}
	in.Name = strings.TrimSpace(in.Name)
	if create {
		switch {
		case in.Name == "":
			errs["name"] = "ErrClusterNameRequired"
		case len(in.Name) > MaxNameLength:
			errs["name"] = "ErrClusterNameTooLong"
		case len(validation.IsDNS1123Label(in.Name)) > 0:
			errs["name"] = "ErrClusterNameInvalid"
		}
	}
	in.Description = strings.TrimSpace(in.Description)
	if !utf8.ValidString(in.Description) || utf8.RuneCountInString(in.Description) > MaxDescriptionLength || strings.ContainsRune(in.Description, 0) {
		errs["description"] = "ErrClusterDescriptionInvalid"
	}
	if in.KubernetesVersion == "" && len(rt.AllowedVersions) > 0 {
		in.KubernetesVersion = rt.AllowedVersions[0]
	}
	if !rt.VersionAllowed(in.KubernetesVersion) {
		errs["kubernetes_version"] = "ErrClusterVersion"
	}
	if in.PublicAccessMode == "" {
		in.PublicAccessMode = rt.DefaultAccessMode
	}
	if in.PublicAccessMode != settings.AccessNodePort && in.PublicAccessMode != settings.AccessLoadBalancer {
		errs["public_access_mode"] = "ErrClusterAccessMode"
	}
	if len(errs) > 0 {
		return errs
	}
	return nil
}

// Runtime loads the runtime settings.
func (s *Service) Runtime(ctx context.Context) (settings.Runtime, error) {
	return settings.Load(ctx, queries.New(s.Pool), s.Box)
}

// ready checks that clusters can be made at all.
func (s *Service) ready(rt settings.Runtime) error {
	if _, err := rt.HostConfig(s.KubeconfigPath); err != nil {
		if errors.Is(err, settings.ErrNoHostCluster) {
			return ErrNoHostCluster
		}
		return fmt.Errorf("%w: %v", ErrNoHostCluster, err)
	}
	if rt.APIBaseDomain == "" {
		return ErrNoBaseDomain
	}
	return nil
}

// Backends are the control-plane backends the organization's plan lets a new
// cluster run on, the default first; the create form offers a choice
// when there are several.
func (s *Service) Backends(ctx context.Context, who orgs.Acting) ([]string, error) {
	rt, err := s.Runtime(ctx)
	if err != nil {
		return nil, err
	}
	ent, err := entitlements.For(ctx, queries.New(s.Pool), who.OrgID)
	if err != nil {
		return nil, err
	}
	return ent.Backends(rt.Backend), nil
}

// Create asks for a new cluster in the organization who acts in, made by
// who, a member who may operate its clusters.
func (s *Service) Create(ctx context.Context, who orgs.Acting, in Input, actor audit.Actor) (queries.Cluster, error) {
	if err := s.MayCreate(ctx, who); err != nil {
		return queries.Cluster{}, err
	}
	rt, err := s.Runtime(ctx)
	if err != nil {
		return queries.Cluster{}, err
	}
	if err := in.validate(rt, true); err != nil {
		return queries.Cluster{}, err
	}
	if err := s.ready(rt); err != nil {
		return queries.Cluster{}, err
	}
	// Allocations of Pod network blocks queue (ClusterPodCIDRLock), and the
	// exclusion constraint refuses an overlap however it is written: a
	// creation refused by it, or rolled back as a deadlock while checking
	// it, tries again.
	for attempt := 1; ; attempt++ {
		c, err := s.create(ctx, who, in, rt, actor)
		if attempt < maxPodCIDRAttempts && (isExclusionViolation(err, podCIDRExclusion) || isDeadlock(err)) {
			continue
		}
		return c, err
	}
}

// MayCreate reports whether who may make a cluster in their organization
// (Operate): nil if so, orgs.ErrForbidden for a member whose role (or
// key) does not allow it, ErrNotFound for anyone else. Create checks it;
// the create form asks it before it shows.
func (s *Service) MayCreate(ctx context.Context, who orgs.Acting) error {
	q := queries.New(s.Pool)
	ok, err := q.OrgMemberIn(ctx, queries.OrgMemberInParams{OrgID: who.OrgID, UserID: who.UserID, Roles: who.Roles(orgs.Operate)})
	switch {
	case err != nil:
		return fmt.Errorf("check membership: %w", err)
	case !ok:
		return s.orgRefusal(ctx, q, who)
	}
	return nil
}

// maxPodCIDRAttempts bounds the tries of a cluster creation that lost its
// Pod network block to another one made at the same instant.
const maxPodCIDRAttempts = 10

// podCIDRExclusion keeps pooled Pod networks from overlapping.
const podCIDRExclusion = "clusters_pod_cidr_pooled_excl"

func (s *Service) create(ctx context.Context, who orgs.Acting, in Input, rt settings.Runtime, actor audit.Actor) (queries.Cluster, error) {
	var c queries.Cluster
	err := pgx.BeginFunc(ctx, s.Pool, func(tx pgx.Tx) error {
		q := queries.New(tx)
		if err := q.ClusterLockOrg(ctx, who.OrgID); err != nil {
			return fmt.Errorf("lock organization: %w", err)
		}
		ent, err := entitlements.For(ctx, q, who.OrgID)
		if err != nil {
			return err
		}
		n, err := q.ClusterCountActiveByOrg(ctx, who.OrgID)
		if err != nil {
			return fmt.Errorf("count clusters: %w", err)
		}
		if err := ent.Cluster(n); err != nil {
			return err
		}
		backends := ent.Backends(rt.Backend)
		if in.Backend == "" {
			in.Backend = backends[0]
		}
		if !slices.Contains(backends, in.Backend) {
			return FieldErrors{"backend": "ErrClusterBackend"}
		}
		ports, err := s.nodePorts(ctx, q, rt, in.PublicAccessMode, nodePorts{})
		if err != nil {
			return err
		}
		c, err = q.ClusterCreate(ctx, queries.ClusterCreateParams{
			OrgID: pgtype.Int8{Int64: who.OrgID, Valid: true}, OwnerID: who.UserID, Name: in.Name, Slug: in.Name + "-" + suffix(),
			Description: in.Description, KubernetesVersion: in.KubernetesVersion,
			PublicAccessMode: in.PublicAccessMode, NodePort: ports.https, KonnectivityNodePort: ports.konnectivity,
			Backend: &in.Backend,
		})
		if isUniqueViolation(err, "clusters_org_name_key") {
			return FieldErrors{"name": "ErrClusterNameTaken"}
		}
		if err != nil {
			return fmt.Errorf("create cluster: %w", err)
		}
		if c.PodCidr, err = podNetwork(ctx, q, rt, c.ID); err != nil {
			return err
		}
		// Its API host name is published from now until it is deleted.
		if err := checks.Schedule(ctx, q, c.ID, checks.DNSRecord, time.Now()); err != nil {
			return err
		}
		return s.record(ctx, tx, q, c, actor, "cluster.create", "Created")
	})
	return c, err
}

// Update changes what may change: Kubernetes version, access mode,
// description. A description alone does not touch the host cluster.
func (s *Service) Update(ctx context.Context, who orgs.Acting, id int64, in Input, actor audit.Actor) (queries.Cluster, error) {
	rt, err := s.Runtime(ctx)
	if err != nil {
		return queries.Cluster{}, err
	}
	var c queries.Cluster
	err = pgx.BeginFunc(ctx, s.Pool, func(tx pgx.Tx) error {
		q := queries.New(tx)
		cur, err := q.ClusterLockForMember(ctx, queries.ClusterLockForMemberParams{ID: id, OrgID: who.OrgID, UserID: who.UserID, Roles: who.Roles(orgs.Operate)})
		if errors.Is(err, pgx.ErrNoRows) {
			return Refusal(ctx, q, who, orgs.Operate, id)
		}
		if err != nil {
			return fmt.Errorf("load cluster: %w", err)
		}
		c, err = s.update(ctx, tx, rt, cur, in, actor)
		return err
	})
	return c, err
}

// update is Update of the cluster cur, locked by the caller in tx.
func (s *Service) update(ctx context.Context, tx pgx.Tx, rt settings.Runtime, cur queries.Cluster, in Input, actor audit.Actor) (queries.Cluster, error) {
	q := queries.New(tx)
	if cur.DeleteRequestedAt.Valid {
		return cur, ErrDeleting
	}
	if Suspended(cur) {
		return cur, ErrSuspended
	}
	in.Name = cur.Name
	if in.KubernetesVersion == cur.KubernetesVersion && !rt.VersionAllowed(cur.KubernetesVersion) {
		// Keeping a version the admin has since withdrawn is fine.
		rt.AllowedVersions = append(rt.AllowedVersions, cur.KubernetesVersion)
	}
	if err := in.validate(rt, false); err != nil {
		return cur, err
	}
	if in.KubernetesVersion == cur.KubernetesVersion && in.PublicAccessMode == cur.PublicAccessMode {
		c, err := q.ClusterUpdateDescription(ctx, queries.ClusterUpdateDescriptionParams{ID: cur.ID, Description: in.Description})
		if err != nil {
			return cur, fmt.Errorf("update cluster: %w", err)
		}
		return c, audit.Record(ctx, q, actor, audit.Event{Action: "cluster.update", TargetType: "cluster", TargetID: fmt.Sprint(c.ID),
			Details: map[string]any{"description": true}})
	}
	ports, err := s.nodePorts(ctx, q, rt, in.PublicAccessMode, nodePorts{https: cur.NodePort, konnectivity: cur.KonnectivityNodePort})
	if err != nil {
		return cur, err
	}
	c, err := q.ClusterUpdateSpec(ctx, queries.ClusterUpdateSpecParams{
		ID: cur.ID, Description: in.Description, KubernetesVersion: in.KubernetesVersion,
		PublicAccessMode: in.PublicAccessMode, NodePort: ports.https, KonnectivityNodePort: ports.konnectivity,
	})
	if err != nil {
		return cur, fmt.Errorf("update cluster: %w", err)
	}
	return c, s.record(ctx, tx, q, c, actor, "cluster.update", "Updated")
}

// Delete asks for a cluster to be removed; confirm must repeat its name.
func (s *Service) Delete(ctx context.Context, who orgs.Acting, id int64, confirm string, actor audit.Actor) (queries.Cluster, error) {
	var c queries.Cluster
	err := pgx.BeginFunc(ctx, s.Pool, func(tx pgx.Tx) error {
		q := queries.New(tx)
		cur, err := q.ClusterLockForMember(ctx, queries.ClusterLockForMemberParams{ID: id, OrgID: who.OrgID, UserID: who.UserID, Roles: who.Roles(orgs.Operate)})
		if errors.Is(err, pgx.ErrNoRows) {
			return Refusal(ctx, q, who, orgs.Operate, id)
		}
		if err != nil {
			return fmt.Errorf("load cluster: %w", err)
		}
		if strings.TrimSpace(confirm) != cur.Name {
			return FieldErrors{"confirm": "ErrClusterConfirmName"}
		}
		if cur.DeleteRequestedAt.Valid {
			c = cur
			return nil
		}
		if c, err = q.ClusterRequestDelete(ctx, id); err != nil {
			return fmt.Errorf("delete cluster: %w", err)
		}
		return s.record(ctx, tx, q, c, actor, "cluster.delete", "DeleteRequested")
	})
	return c, err
}

// Retry starts a failed cluster's work again.
func (s *Service) Retry(ctx context.Context, who orgs.Acting, id int64, actor audit.Actor) (queries.Cluster, error) {
	var c queries.Cluster
	err := pgx.BeginFunc(ctx, s.Pool, func(tx pgx.Tx) error {
		q := queries.New(tx)
		if _, err := q.ClusterLockForMember(ctx, queries.ClusterLockForMemberParams{ID: id, OrgID: who.OrgID, UserID: who.UserID, Roles: who.Roles(orgs.Operate)}); errors.Is(err, pgx.ErrNoRows) {
			return Refusal(ctx, q, who, orgs.Operate, id)
		} else if err != nil {
			return fmt.Errorf("load cluster: %w", err)
		}
		var err error
		if c, err = s.retry(ctx, tx, q, id); err != nil {
			return err
		}
		return s.record(ctx, tx, q, c, actor, "cluster.retry", "RetryRequested")
	})
	return c, err
}

// retry gives the failed cluster id, locked by the caller, a fresh
// attempt; ErrNotFailed when it has not failed.
func (s *Service) retry(ctx context.Context, tx pgx.Tx, q *queries.Queries, id int64) (queries.Cluster, error) {
	c, err := q.ClusterRetry(ctx, id)
	if errors.Is(err, pgx.ErrNoRows) {
		return c, ErrNotFailed
	}
	if err != nil {
		return c, fmt.Errorf("retry cluster: %w", err)
	}
	return c, s.supersedeReconciles(ctx, tx, id)
}

// supersedeReconciles removes the reconciles of cluster id that River
// still holds for an earlier failure (its own retries, waiting): they
// would run the work again after the fresh one. A running one is left to
// finish; the cluster's lease keeps it apart from the new job.
func (s *Service) supersedeReconciles(ctx context.Context, tx pgx.Tx, id int64) error {
	superseded := river.NewJobDeleteManyParams().
		Kinds(ReconcileArgs{}.Kind()).
		States(rivertype.JobStateAvailable, rivertype.JobStatePending, rivertype.JobStateRetryable, rivertype.JobStateScheduled).
		Where("(args->>'cluster_id')::bigint = @cluster_id", river.NamedArgs{"cluster_id": id})
	if _, err := s.River.JobDeleteManyTx(ctx, tx, superseded); err != nil {
		return fmt.Errorf("remove superseded reconciles: %w", err)
	}
	return nil
}

// Get returns a cluster of the organization who acts in, for any member.
func (s *Service) Get(ctx context.Context, who orgs.Acting, id int64) (queries.Cluster, error) {
	return s.GetFor(ctx, who, orgs.Read, id)
}

// GetFor returns a cluster of the organization who acts in, for a member
// whose role allows p: ErrNotFound for another's, orgs.ErrForbidden for
// one a member may see but their role (or their key) does not allow p on.
func (s *Service) GetFor(ctx context.Context, who orgs.Acting, p orgs.Permission, id int64) (queries.Cluster, error) {
	c, err := queries.New(s.Pool).ClusterGetForMember(ctx, queries.ClusterGetForMemberParams{ID: id, OrgID: who.OrgID, UserID: who.UserID, Roles: who.Roles(p)})
	if errors.Is(err, pgx.ErrNoRows) {
		return c, s.refusal(ctx, who, p, id)
	}
	return c, err
}

// OrgOf is the organization of cluster id when userID is a member of it,
// whichever organization they work in: a link to a cluster of another of
// their organizations (a notice's, one shared by a colleague) can offer
// to switch there. ErrNotFound for anyone else.
func (s *Service) OrgOf(ctx context.Context, userID, id int64) (queries.ClusterOrgOfMemberRow, error) {
	o, err := queries.New(s.Pool).ClusterOrgOfMember(ctx, queries.ClusterOrgOfMemberParams{ID: id, UserID: userID})
	if errors.Is(err, pgx.ErrNoRows) {
		return o, ErrNotFound
	}
	if err != nil {
		return o, fmt.Errorf("organization of cluster %d: %w", id, err)
	}
	return o, nil
}

// record writes the cluster event (its reason names the catalog message
// ClusterEvent<reason>), the audit event and the reconcile job.
func (s *Service) record(ctx context.Context, tx pgx.Tx, q *queries.Queries, c queries.Cluster, actor audit.Actor, action, reason string) error {
	return s.recordAs(ctx, tx, q, c, actor, action, reason, nil)
}

// recordAs is record with more details for the audit event.
func (s *Service) recordAs(ctx context.Context, tx pgx.Tx, q *queries.Queries, c queries.Cluster, actor audit.Actor, action, reason string, more map[string]any) error {
	if _, err := q.ClusterEventCreate(ctx, queries.ClusterEventCreateParams{ClusterID: c.ID, Level: "info", Reason: reason}); err != nil {
		return fmt.Errorf("cluster event: %w", err)
	}
	details := map[string]any{
		"name": c.Name, "kubernetes_version": c.KubernetesVersion, "public_access_mode": c.PublicAccessMode, "generation": c.Generation,
	}
	maps.Copy(details, more)
	if err := audit.Record(ctx, q, actor, audit.Event{Action: action, TargetType: "cluster", TargetID: fmt.Sprint(c.ID), Details: details}); err != nil {
		return err
	}
	if _, err := s.River.InsertTx(ctx, tx, ReconcileArgs{ClusterID: c.ID}, nil); err != nil {
		return fmt.Errorf("enqueue reconcile: %w", err)
	}
	return nil
}

// nodePorts are a cluster's NodePorts in nodeport mode.
type nodePorts struct{ https, konnectivity pgtype.Int4 }

// nodePorts keeps the cluster's NodePorts in nodeport mode, or picks free
// ones in the admin's range; loadbalancer mode needs none. The UNIQUE
// constraints settle races: the loser's transaction fails and the user can
// submit again.
func (s *Service) nodePorts(ctx context.Context, q *queries.Queries, rt settings.Runtime, mode string, current nodePorts) (nodePorts, error) {
	if mode != settings.AccessNodePort {
		return nodePorts{}, nil
	}
	if current.https.Valid && current.konnectivity.Valid {
		return current, nil
	}
	used, err := q.ClusterNodePortsInUse(ctx)
	if err != nil {
		return nodePorts{}, fmt.Errorf("node ports in use: %w", err)
	}
	taken := make(map[int32]bool, len(used))
	for _, p := range used {
		taken[p] = true
	}
	span := rt.NodePortMax - rt.NodePortMin + 1
	start, err := rand.Int(rand.Reader, big.NewInt(int64(span)))
	if err != nil {
		return nodePorts{}, err
	}
	var free []int32
	for i := 0; i < span && len(free) < 2; i++ {
		p := int32(rt.NodePortMin + (int(start.Int64())+i)%span)
		if !taken[p] {
			free = append(free, p)
		}
	}
	if len(free) < 2 {
		return nodePorts{}, ErrNoFreeNodePort
	}
	return nodePorts{https: pgtype.Int4{Int32: free[0], Valid: true}, konnectivity: pgtype.Int4{Int32: free[1], Valid: true}}, nil
}

// suffix makes slugs globally unique: six characters of [a-z0-9].
func suffix() string {
	const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
	b := make([]byte, 6)
	for i := range b {
		n, _ := rand.Int(rand.Reader, big.NewInt(int64(len(alphabet))))
		b[i] = alphabet[n.Int64()]
	}
	return string(b)
}

// podNetwork gives the new cluster its Pod network: a block of the pool,
// or the settings' one network when no pool is set.
func podNetwork(ctx context.Context, q *queries.Queries, rt settings.Runtime, id int64) (netip.Prefix, error) {
	pool, bits, ok := rt.PodPool()
	if !ok {
		p, err := netip.ParsePrefix(rt.PodCIDR)
		if err != nil {
			return netip.Prefix{}, fmt.Errorf("pod CIDR setting %q: %w", rt.PodCIDR, err)
		}
		if err := q.ClusterSetPodCIDR(ctx, queries.ClusterSetPodCIDRParams{ID: id, PodCidr: p.Masked()}); err != nil {
			return netip.Prefix{}, fmt.Errorf("set pod network of cluster %d: %w", id, err)
		}
		return p.Masked(), nil
	}
	if err := q.ClusterPodCIDRLock(ctx); err != nil {
		return netip.Prefix{}, fmt.Errorf("wait for the pod network pool: %w", err)
	}
	p, err := q.ClusterAllocatePodCIDR(ctx, queries.ClusterAllocatePodCIDRParams{ID: id, Pool: pool, Bits: int32(bits)})
	if errors.Is(err, pgx.ErrNoRows) {
		return netip.Prefix{}, ErrPodPoolFull
	}
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("allocate pod network of cluster %d from %s: %w", id, pool, err)
	}
	return p, nil
}

func isExclusionViolation(err error, constraint string) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "23P01" && pgErr.ConstraintName == constraint
}

// isDeadlock: PostgreSQL rolled the transaction back to break a
// deadlock. Two transactions checking the exclusion constraint for the
// same block at once may each wait for the other (the constraint's
// documented behaviour under concurrent insertions), and one is told so
// instead of being told of the violation.
func isDeadlock(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "40P01"
}

func isUniqueViolation(err error, constraint string) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "23505" && pgErr.ConstraintName == constraint
}

// refusal is why who may not do p on cluster id, which a query for a
// member whose role allows p did not find: orgs.ErrForbidden when who may
// read it (a viewer, a read key), else ErrNotFound, as for a cluster of
// another organization.
func (s *Service) refusal(ctx context.Context, who orgs.Acting, p orgs.Permission, id int64) error {
	return Refusal(ctx, queries.New(s.Pool), who, p, id)
}

// Refusal is refusal for the services that find a cluster of their own
// (join tokens).
func Refusal(ctx context.Context, q *queries.Queries, who orgs.Acting, p orgs.Permission, id int64) error {
	if p == orgs.Read {
		return ErrNotFound
	}
	_, err := q.ClusterGetForMember(ctx, queries.ClusterGetForMemberParams{ID: id, OrgID: who.OrgID, UserID: who.UserID, Roles: who.Roles(orgs.Read)})
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return ErrNotFound
	case err != nil:
		return fmt.Errorf("load cluster: %w", err)
	}
	return orgs.ErrForbidden
}

// orgRefusal is why who may not make a cluster in their organization:
// orgs.ErrForbidden for a member who may only read, else ErrNotFound.
func (s *Service) orgRefusal(ctx context.Context, q *queries.Queries, who orgs.Acting) error {
	ok, err := q.OrgMemberIn(ctx, queries.OrgMemberInParams{OrgID: who.OrgID, UserID: who.UserID, Roles: who.Roles(orgs.Read)})
	switch {
	case err != nil:
		return fmt.Errorf("check membership: %w", err)
	case ok:
		return orgs.ErrForbidden
	}
	return ErrNotFound
}
