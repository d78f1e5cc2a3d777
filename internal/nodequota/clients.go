package nodequota

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/util/cache"
	"k8s.io/client-go/kubernetes"

	"github.com/kubebyon/kubebyon/internal/clusters"
	"github.com/kubebyon/kubebyon/queries"
)

// clientTTL is how long a virtual cluster's client is kept: long enough
// that a fleet joining at once reads the cluster's kubeconfig Secret on
// the host once, short enough that a changed kubeconfig that still works
// (a rotated certificate) is read again soon.
const clientTTL = time.Minute

// ClientsKept is how many clusters' clients the webhook keeps: enough for
// every cluster that a fleet is joining at the same time.
const ClientsKept = 1024

// Clients keeps a client per virtual cluster for a short while, so that
// each admission review need not read the cluster's kubeconfig Secret from
// the host cluster. It holds at most a fixed number of clusters (the least
// recently used go first) and is safe for concurrent use.
type Clients struct {
	virtual clusters.VirtualConfigFunc
	cache   *cache.LRUExpireCache
}

// NewClients keeps the clients of up to size clusters, made from the
// configurations virtual gives.
func NewClients(virtual clusters.VirtualConfigFunc, size int) *Clients {
	return &Clients{virtual: virtual, cache: cache.NewLRUExpireCache(size)}
}

// get returns the cluster's client, and whether it was kept from before.
func (k *Clients) get(ctx context.Context, c queries.Cluster) (kubernetes.Interface, bool, error) {
	if kc, ok := k.cache.Get(c.ID); ok {
		return kc.(kubernetes.Interface), true, nil
	}
	cfg, err := k.virtual(ctx, c)
	if err != nil {
		return nil, false, fmt.Errorf("reach cluster %d: %w", c.ID, err)
	}
	kc, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, false, fmt.Errorf("client of cluster %d: %w", c.ID, err)
	}
	k.cache.Add(c.ID, kc, clientTTL)
	return kc, false, nil
}

// forget drops the cluster's client, after a call with it failed.
func (k *Clients) forget(id int64) {
	k.cache.Remove(id)
}
