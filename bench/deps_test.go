package bench

import (
	"log/slog"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/kubebyon/kubebyon/internal/clusters"
	"github.com/kubebyon/kubebyon/internal/locale"
	"github.com/kubebyon/kubebyon/internal/secrets"
	"github.com/kubebyon/kubebyon/internal/services"
	"github.com/kubebyon/kubebyon/jobs"
)

// workerDeps are the workers' dependencies as cmd builds them, from the
// domain services on pool (services.New); virtual, when not nil, stands
// in for the clusters' control planes.
func workerDeps(pool *pgxpool.Pool, box *secrets.Box, catalog *locale.Catalog, logger *slog.Logger, kubeconfig string, virtual clusters.VirtualConfigFunc) (*services.Set, jobs.Deps) {
	svc := services.New(services.Config{Pool: pool, Box: box, Catalog: catalog, Logger: logger, KubeconfigPath: kubeconfig, Virtual: virtual})
	return svc, jobs.Deps{
		Pool: pool, Logger: logger, Metrics: prometheus.NewRegistry(), Box: box, Catalog: catalog,
		KubeconfigPath: kubeconfig, VirtualConfig: svc.Virtual, JoinTokens: svc.JoinTokens,
		Billing: svc.Billing, Webhooks: svc.Webhooks, ClusterMetrics: svc.Metrics, DNS: svc.DNS,
		Ingress: svc.Ingress, Mailer: svc.Mail,
	}
}
