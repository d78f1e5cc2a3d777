package jobs_test

import (
	"log/slog"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/kubebyon/kubebyon/internal/locale"
	"github.com/kubebyon/kubebyon/internal/secrets"
	"github.com/kubebyon/kubebyon/internal/services"
	"github.com/kubebyon/kubebyon/jobs"
)

// workerDeps are the workers' dependencies as cmd builds them: the
// domain services from services.New on pool, with kubeconfig as
// KUBEBYON_KUBECONFIG.
func workerDeps(pool *pgxpool.Pool, box *secrets.Box, catalog *locale.Catalog, logger *slog.Logger, kubeconfig string) jobs.Deps {
	svc := services.New(services.Config{Pool: pool, Box: box, Catalog: catalog, Logger: logger, KubeconfigPath: kubeconfig})
	return jobs.Deps{
		Pool: pool, Logger: logger, Metrics: prometheus.NewRegistry(), Box: box, Catalog: catalog,
		KubeconfigPath: kubeconfig, VirtualConfig: svc.Virtual, JoinTokens: svc.JoinTokens,
		Billing: svc.Billing, Webhooks: svc.Webhooks, ClusterMetrics: svc.Metrics, DNS: svc.DNS,
		Ingress: svc.Ingress, Mailer: svc.Mail,
	}
}
