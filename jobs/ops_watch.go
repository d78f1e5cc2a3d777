package jobs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"k8s.io/client-go/kubernetes"

	"github.com/kubebyon/kubebyon/internal/notify"
	"github.com/kubebyon/kubebyon/internal/opswatch"
	"github.com/kubebyon/kubebyon/internal/secrets"
	"github.com/kubebyon/kubebyon/internal/settings"
	"github.com/kubebyon/kubebyon/queries"
)

// OpsWatchWorker tells the admins (as their notification preferences say,
// kind platform_health) and the platform's webhook channels about
// background jobs that failed for good and about the host cluster gone
// unreachable and back (package opswatch).
type OpsWatchWorker struct {
	river.WorkerDefaults[opswatch.WatchArgs]
	Pool    *pgxpool.Pool
	Box     *secrets.Box
	Logger  *slog.Logger
	Notices notify.Notices
	// KubeconfigPath is KUBEBYON_KUBECONFIG, for the host check.
	KubeconfigPath string
	// Host checks the host cluster; nil: a request for its version,
	// through the host configuration in effect.
	Host opswatch.HostCheck
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Timeout implements river.Worker.
func (w *OpsWatchWorker) Timeout(*river.Job[opswatch.WatchArgs]) time.Duration {
	return opswatch.HostTimeout + 20*time.Second
}

// Work implements river.Worker.
func (w *OpsWatchWorker) Work(ctx context.Context, _ *river.Job[opswatch.WatchArgs]) error {
	host := w.Host
	if host == nil {
		host = w.hostVersion
	}
	hostErr := opswatch.CheckHost(ctx, host)
	now := time.Now()
	if w.Now != nil {
		now = w.Now()
	}
	return pgx.BeginFunc(ctx, w.Pool, func(tx pgx.Tx) error {
		alerts, st, err := opswatch.Watch(ctx, tx, now, hostErr)
		if err != nil || len(alerts) == 0 {
			return err
		}
		admins, err := queries.New(tx).UserListActiveAdmins(ctx)
		if err != nil {
			return fmt.Errorf("list admins: %w", err)
		}
		for _, a := range alerts {
			// One line per alert: each is a change of state.
			w.Logger.WarnContext(ctx, "platform health", "alert", a.Template, "host_failures", st.HostFailures, "data", a.Data)
			for _, admin := range admins {
				if _, err := w.Notices.Tell(ctx, tx, admin, notify.PlatformHealth, a.Template, a.Data); err != nil {
					return err
				}
			}
			if err := w.Notices.TellPlatform(ctx, tx, notify.PlatformHealth, a.Template, a.Data); err != nil {
				return err
			}
		}
		return nil
	})
}

// hostVersion asks the host cluster in effect for its version.
func (w *OpsWatchWorker) hostVersion(ctx context.Context) error {
	rt, err := settings.Load(ctx, queries.New(w.Pool), w.Box)
	if err != nil {
		return fmt.Errorf("load settings: %w", err)
	}
	cfg, err := rt.HostConfig(w.KubeconfigPath)
	if errors.Is(err, settings.ErrNoHostCluster) {
		return opswatch.ErrNoHost
	}
	if err != nil {
		return err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("host client: %w", err)
	}
	if err := cs.Discovery().RESTClient().Get().AbsPath("/version").Do(ctx).Error(); err != nil {
		return fmt.Errorf("host cluster: %w", err)
	}
	return nil
}
