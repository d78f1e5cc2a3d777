package edgeagent

import (
	"cmp"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/kubebyon/kubebyon/internal/edgewire"
)

// The agent's files in its directory, beside the current config
// (ConfigFile): one directory per version applied, and HAProxy's master
// socket when the agent runs HAProxy itself.
const (
	versionsDir      = "versions"
	MasterSocketFile = "master.sock"
)

const (
	// DefaultWait is how long the agent's long polls wait.
	DefaultWait = 25 * time.Second
	// reloadTimeout bounds the wait for a reloaded HAProxy to serve the
	// new version.
	reloadTimeout = 60 * time.Second
	// maxBackoff caps the wait between failed polls.
	maxBackoff = 30 * time.Second
)

// Agent keeps one HAProxy in step with the platform: `kubebyon edge`. It
// needs no database: it long-polls the platform's edge config API with
// an edge token, renders the state, has HAProxy check it, swaps it in and
// reloads HAProxy through its master socket (seamlessly: established
// connections stay), then reports back. A config HAProxy refuses never
// replaces the one it runs.
type Agent struct {
	// Platform serves the desired state and takes the reports: Remote for
	// `kubebyon edge`, edge.Local for the edge inside serve.
	Platform Platform
	// Name tells this edge apart from others with the same token.
	Name string
	// Dir holds the configs (made if missing).
	Dir string
	// HAProxy is the haproxy binary.
	HAProxy string
	// APIBind and KonnectivityBind are where HAProxy listens (":443",
	// ":8132").
	APIBind, KonnectivityBind string
	// MasterSocket is the master socket of an HAProxy already running in
	// master-worker mode (-W -S) on Dir/haproxy.cfg; empty, the agent runs
	// HAProxy itself and stops it when it ends.
	MasterSocket string
	// Wait is the long polls' wait (DefaultWait when zero).
	Wait   time.Duration
	Logger *slog.Logger

	applied string // the version HAProxy serves
	lastErr string
}

// Run keeps HAProxy in step until ctx ends. It returns early only when
// HAProxy cannot be run or dies.
func (a *Agent) Run(ctx context.Context) error {
	// HAProxy's config names its files by absolute paths.
	dir, err := filepath.Abs(a.Dir)
	if err != nil {
		return fmt.Errorf("edge directory: %w", err)
	}
	a.Dir = dir
	if err := os.MkdirAll(filepath.Join(a.Dir, versionsDir), 0o700); err != nil {
		return fmt.Errorf("edge directory: %w", err)
	}
	died := make(chan error, 1)
	if a.MasterSocket == "" {
		// HAProxy needs a config to start: the empty state's, until the
		// platform answers.
		if err := a.write(ctx, edgewire.State{Routes: []edgewire.Route{}}); err != nil {
			return err
		}
		a.MasterSocket = filepath.Join(a.Dir, MasterSocketFile)
		stop, err := a.startHAProxy(ctx, died)
		if err != nil {
			return err
		}
		defer stop()
	}
	if v, err := a.servedVersion(); err == nil {
		a.applied = v
	}
	backoff := time.Second
	for {
		err := a.step(ctx)
		if ctx.Err() != nil {
			return nil
		}
		a.lastErr = ""
		if err != nil {
			a.lastErr = err.Error()
			a.Logger.ErrorContext(ctx, "edge", "error", err)
		}
		if rerr := a.report(ctx); rerr != nil {
			a.Logger.WarnContext(ctx, "edge report failed", "error", rerr)
			err = cmp.Or(err, rerr)
		}
		// A poll, an apply or a report that failed is tried again later,
		// each time later, not at once.
		wait := time.Duration(0)
		if err != nil {
			wait, backoff = backoff, min(2*backoff, maxBackoff)
		} else {
			backoff = time.Second
		}
		select {
		case <-ctx.Done():
			return nil
		case err := <-died:
			return fmt.Errorf("haproxy stopped: %w", err)
		case <-time.After(wait):
		}
	}
}

// step polls the platform once and applies a new state.
func (a *Agent) step(ctx context.Context) error {
	st, changed, err := a.poll(ctx)
	if err != nil {
		return fmt.Errorf("poll the platform: %w", err)
	}
	if !changed {
		return nil
	}
	if err := a.Apply(ctx, st); err != nil {
		return fmt.Errorf("apply version %s: %w", st.Version, err)
	}
	a.Logger.InfoContext(ctx, "edge config applied", "version", st.Version, "routes", len(st.Routes))
	return nil
}

// startHAProxy runs HAProxy in master-worker mode on Dir/haproxy.cfg and
// waits until it serves. stop ends it.
func (a *Agent) startHAProxy(ctx context.Context, died chan<- error) (stop func(), err error) {
	_ = os.Remove(a.MasterSocket)
	cmd := exec.Command(a.HAProxy, "-W", "-S", a.MasterSocket+",mode,600", "-f", filepath.Join(a.Dir, ConfigFile))
	// HAProxy's lines go to the edge's log, each at its level.
	out, outW := io.Pipe()
	cmd.Stdout, cmd.Stderr = outW, outW
	var stopping atomic.Bool
	logged := make(chan struct{})
	go func() {
		defer close(logged)
		logHAProxy(context.WithoutCancel(ctx), a.Logger, out, &stopping)
	}()
	// HAProxy ends with the edge, even one killed outright.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	if err := cmd.Start(); err != nil {
		outW.Close()
		return nil, fmt.Errorf("start haproxy: %w", err)
	}
	exited := make(chan struct{})
	go func() {
		err := cmd.Wait()
		outW.Close()
		<-logged
		close(exited)
		died <- err
	}()
	stop = func() {
		stopping.Store(true)
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-exited
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := a.servedVersion(); err == nil {
			return stop, nil
		}
		select {
		case <-exited:
			return nil, errors.New("haproxy exited at start (its output is logged above)")
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			stop()
			return nil, errors.New("haproxy did not answer on its master socket within 30s")
		}
	}
}

// poll asks the platform for the state, waiting for one newer than the
// applied version.
func (a *Agent) poll(ctx context.Context) (edgewire.State, bool, error) {
	wait := a.Wait
	if wait == 0 {
		wait = DefaultWait
	}
	st, changed, err := a.Platform.Config(ctx, a.applied, wait)
	if err != nil || !changed || st.Version == a.applied {
		return edgewire.State{}, false, err
	}
	return st, true, nil
}

// Apply makes HAProxy serve st: rendered into a directory of its own,
// checked by HAProxy, made the current config, and reloaded. A state
// HAProxy refuses, or a reload that does not take, leaves the config it
// served in place.
func (a *Agent) Apply(ctx context.Context, st edgewire.State) error {
	prev, err := os.ReadFile(filepath.Join(a.Dir, ConfigFile))
	if err != nil {
		return fmt.Errorf("read the current config: %w", err)
	}
	if err := a.write(ctx, st); err != nil {
		return err
	}
	if err := a.reload(ctx, st.Version); err != nil {
		// A master restarted later must start from a config that works.
		if werr := writeReplace(filepath.Join(a.Dir, ConfigFile), prev); werr != nil {
			return errors.Join(err, werr)
		}
		return err
	}
	a.applied = st.Version
	a.prune(st.Version)
	return nil
}

// write renders st into Dir/versions/<version>, has HAProxy check it
// there, and makes it Dir/haproxy.cfg (which names that directory's maps).
func (a *Agent) write(ctx context.Context, st edgewire.State) error {
	dir := filepath.Join(a.Dir, versionsDir, versionDescription(st.Version))
	files, err := Render(Config{
		Version: st.Version, APIBind: a.APIBind, KonnectivityBind: a.KonnectivityBind,
		Dir: dir, AdminSocket: a.adminSocket(), Routes: st.Routes, Console: st.Console,
	})
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("version directory: %w", err)
	}
	if err := files.Write(dir); err != nil {
		return err
	}
	if err := Check(ctx, a.HAProxy, dir); err != nil {
		_ = os.RemoveAll(dir)
		return err
	}
	return writeReplace(filepath.Join(a.Dir, ConfigFile), files.Config)
}

func (a *Agent) adminSocket() string { return filepath.Join(a.Dir, AdminSocketFile) }

// reload asks HAProxy's master to reload, and waits until the runtime API
// shows the version: a reload that fails leaves the old worker serving
// the old one.
func (a *Agent) reload(ctx context.Context, version string) error {
	out, err := socketCommand(a.MasterSocket, "reload")
	if errors.Is(err, syscall.ECONNRESET) {
		// The master re-executes itself and may drop the connection
		// before it closes it: the served version below tells.
		err = nil
	}
	if err != nil {
		return fmt.Errorf("reload through %s: %w", a.MasterSocket, err)
	}
	if strings.Contains(out, "Success=0") {
		return fmt.Errorf("haproxy refused the reload: %s", strings.TrimSpace(out))
	}
	want := versionDescription(version)
	deadline := time.Now().Add(reloadTimeout)
	for {
		v, err := a.servedVersion()
		if err == nil && v == want {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("haproxy still serves version %q %s after the reload (%v): its log says why", v, reloadTimeout, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// prune removes the version directories but version's.
func (a *Agent) prune(version string) {
	entries, _ := os.ReadDir(filepath.Join(a.Dir, versionsDir))
	for _, e := range entries {
		if e.Name() != versionDescription(version) {
			_ = os.RemoveAll(filepath.Join(a.Dir, versionsDir, e.Name()))
		}
	}
}

// runtime sends a command of HAProxy's runtime API to the current worker,
// through the master: after a reload the old worker, still finishing its
// connections, shares the admin socket and may answer there instead.
func (a *Agent) runtime(command string) (string, error) {
	return socketCommand(a.MasterSocket, "@1 "+command)
}

// servedVersion is the version the current worker serves, from its
// description (show info).
func (a *Agent) servedVersion() (string, error) {
	info, err := a.runtime("show info")
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(line, "description: "); ok {
			if v == "none" {
				return "", nil
			}
			return strings.TrimSpace(v), nil
		}
	}
	return "", errors.New("show info has no description")
}

// socketCommand sends one command to an HAProxy socket and reads the
// answer. The master socket keeps a connection open after most answers:
// ";quit" closes it (after "reload" the master closes it itself).
func socketCommand(path, command string) (string, error) {
	conn, err := net.DialTimeout("unix", path, 5*time.Second)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	if command != "reload" {
		command += ";quit"
	}
	if _, err := io.WriteString(conn, command+"\n"); err != nil {
		return "", err
	}
	b, err := io.ReadAll(conn)
	return string(b), err
}

// report tells the platform the applied version, HAProxy's version, its
// backends' health and the last error.
func (a *Agent) report(ctx context.Context) error {
	r := edgewire.Report{Name: a.Name, AppliedVersion: a.applied, LastError: a.lastErr, Down: []edgewire.Backend{}}
	if info, err := a.runtime("show info"); err == nil {
		for _, line := range strings.Split(info, "\n") {
			if v, ok := strings.CutPrefix(line, "Version: "); ok {
				r.HAProxyVersion = strings.TrimSpace(v)
			}
		}
		if err := a.health(&r); err != nil && r.LastError == "" {
			r.LastError = "read backend health: " + err.Error()
		}
	} else if r.LastError == "" {
		r.LastError = "haproxy does not answer on its master socket: " + err.Error()
	}
	if len(r.LastError) > edgewire.MaxReportText {
		// Cut on a character: a cut one would grow past the limit in JSON.
		r.LastError = strings.ToValidUTF8(r.LastError[:edgewire.MaxReportText], "")
	}
	return a.Platform.Status(ctx, r)
}

// health counts the backends' servers by their check (show stat).
func (a *Agent) health(r *edgewire.Report) error {
	out, err := a.runtime("show stat -1 4 -1")
	if err != nil {
		return err
	}
	rd := csv.NewReader(strings.NewReader(strings.TrimPrefix(out, "# ")))
	rd.FieldsPerRecord = -1
	rows, err := rd.ReadAll()
	if err != nil {
		return fmt.Errorf("parse show stat: %w", err)
	}
	if len(rows) == 0 {
		return errors.New("show stat is empty")
	}
	col := map[string]int{}
	for i, name := range rows[0] {
		col[name] = i
	}
	px, sv, status := col["pxname"], col["svname"], col["status"]
	counts := map[string]*edgewire.Backend{}
	var order []string
	for _, row := range rows[1:] {
		if len(row) <= max(px, sv, status) || row[sv] == "BACKEND" || row[sv] == "FRONTEND" {
			continue
		}
		id, kind, ok := backendOf(row[px])
		if !ok {
			continue
		}
		b := counts[row[px]]
		if b == nil {
			b = &edgewire.Backend{ClusterID: id, Kind: kind}
			counts[row[px]] = b
			order = append(order, row[px])
		}
		if strings.HasPrefix(row[status], "UP") {
			b.Up++
		} else {
			b.Down++
		}
	}
	for _, name := range order {
		b := counts[name]
		if b.Down == 0 {
			r.BackendsUp++
			continue
		}
		r.BackendsDown++
		if len(r.Down) < edgewire.MaxDown {
			r.Down = append(r.Down, *b)
		}
	}
	return nil
}

// backendOf reads a backend name of Render's: c<cluster id>_api or
// c<cluster id>_konnectivity.
func backendOf(name string) (int64, string, bool) {
	rest, ok := strings.CutPrefix(name, "c")
	if !ok {
		return 0, "", false
	}
	idPart, kind, ok := strings.Cut(rest, "_")
	id, err := strconv.ParseInt(idPart, 10, 64)
	if !ok || err != nil || (kind != "api" && kind != "konnectivity") {
		return 0, "", false
	}
	return id, kind, true
}
