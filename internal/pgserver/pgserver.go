// Package pgserver runs a private PostgreSQL server from the PostgreSQL server
// binaries installed on the machine. It listens on a Unix socket only, keeps
// its data in a directory of the caller's, and runs as an unprivileged user
// when the caller is root. Nothing is downloaded.
package pgserver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"k8s.io/apimachinery/pkg/util/wait"
)

// ErrNotInstalled says that no PostgreSQL server binaries were found.
var ErrNotInstalled = errors.New("PostgreSQL server binaries (initdb, postgres) not found on PATH or under /usr/lib/postgresql/*/bin: install the Debian package 'postgresql' (or set DATABASE_URL to an existing server)")

// Options configure a server.
type Options struct {
	// Dir holds the cluster ("pgdata"), the socket directory and the log.
	Dir string
	// Database is created on first start; the superuser is named after it too.
	Database string
	// Settings are extra postgres -c settings (for tests: fsync=off ...).
	Settings map[string]string
	Logger   *slog.Logger
}

// Server is a running PostgreSQL server.
type Server struct {
	opts    Options
	sockDir string
	logPath string
	binDir  string
	pgdata  string
	cred    *syscall.Credential

	mu sync.Mutex
	// proc is the postmaster we started; nil when another process runs
	// the server.
	proc *process
	// stopping is set by Stop, after which Watch restarts nothing.
	stopping bool
	// restarting is set while Watch brings the server back.
	restarting bool
}

// process is one run of the postmaster.
type process struct {
	cmd     *exec.Cmd
	done    chan struct{}
	waitErr error
}

func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// socketFile is the name PostgreSQL gives its socket for port 5432.
const socketFile = ".s.PGSQL.5432"

// maxSocketPath is the longest Unix socket path Linux accepts (sun_path less
// its NUL terminator).
const maxSocketPath = 107

// FindBinDir returns the directory with initdb and postgres: PATH first, then
// the newest /usr/lib/postgresql/<version>/bin.
func FindBinDir() (string, error) {
	if p, err := exec.LookPath("initdb"); err == nil {
		dir := filepath.Dir(p)
		if real, err := filepath.EvalSymlinks(p); err == nil {
			dir = filepath.Dir(real)
		}
		if _, err := os.Stat(filepath.Join(dir, "postgres")); err == nil {
			return dir, nil
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return versionOf(dirs[i]) > versionOf(dirs[j]) })
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "initdb")); err != nil {
			continue
		}
		if _, err := os.Stat(filepath.Join(d, "postgres")); err == nil {
			return d, nil
		}
	}
	return "", ErrNotInstalled
}

func versionOf(binDir string) float64 {
	v, _ := strconv.ParseFloat(filepath.Base(filepath.Dir(binDir)), 64)
	return v
}

// Start initialises the cluster when it is new, starts the server and waits
// until it accepts connections and the database exists.
func Start(ctx context.Context, opts Options) (*Server, error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Database == "" {
		return nil, errors.New("pgserver: no database name")
	}
	binDir, err := FindBinDir()
	if err != nil {
		return nil, err
	}
	cred, err := runAs()
	if err != nil {
		return nil, err
	}

	dir, err := filepath.Abs(opts.Dir)
	if err != nil {
		return nil, fmt.Errorf("postgres dir: %w", err)
	}
	opts.Dir = dir
	pgdata := filepath.Join(dir, "pgdata")
	s := &Server{opts: opts, logPath: filepath.Join(dir, "postgres.log"), binDir: binDir, pgdata: pgdata, cred: cred}
	if s.sockDir, err = socketDir(dir); err != nil {
		return nil, err
	}
	if err := checkOwner(dir, pgdata, cred); err != nil {
		return nil, err
	}
	for _, d := range []string{dir, s.sockDir} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, fmt.Errorf("create %s: %w", d, err)
		}
		if err := chown(d, cred); err != nil {
			return nil, err
		}
	}

	// Another kubebyon process (serve, while an admin runs 'kubebyon admin')
	// may already run the server on this data: share it, and leave it be.
	if _, err := os.Stat(filepath.Join(s.sockDir, socketFile)); err == nil {
		if conn, err := pgx.Connect(ctx, s.URL()); err == nil {
			_ = conn.Close(ctx)
			opts.Logger.Info("using the embedded PostgreSQL another kubebyon process runs", "socket_dir", s.sockDir)
			return s, nil
		}
	}

	if _, err := os.Stat(filepath.Join(pgdata, "PG_VERSION")); errors.Is(err, os.ErrNotExist) {
		opts.Logger.Info("initialising embedded PostgreSQL", "dir", pgdata)
		if err := s.initdb(ctx, binDir, pgdata, cred); err != nil {
			return nil, err
		}
	}

	p, err := s.launch()
	if err != nil {
		return nil, err
	}
	s.proc = p
	if err := s.waitReady(ctx, p); err != nil {
		_ = s.Stop(context.Background())
		return nil, err
	}
	opts.Logger.Info("embedded PostgreSQL ready", "socket_dir", s.sockDir)
	return s, nil
}

// launch starts a postmaster on the cluster.
func (s *Server) launch() (*process, error) {
	logFile, err := os.OpenFile(s.logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open postgres log: %w", err)
	}
	defer logFile.Close()

	args := []string{"-D", s.pgdata,
		"-c", "listen_addresses=",
		"-c", "unix_socket_directories=" + s.sockDir,
		"-c", "unix_socket_permissions=0700",
		"-c", "logging_collector=off",
	}
	keys := make([]string, 0, len(s.opts.Settings))
	for k := range s.opts.Settings {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		args = append(args, "-c", k+"="+s.opts.Settings[k])
	}
	p := &process{cmd: exec.Command(filepath.Join(s.binDir, "postgres"), args...), done: make(chan struct{})}
	p.cmd.Stdout, p.cmd.Stderr = logFile, logFile
	p.cmd.SysProcAttr = &syscall.SysProcAttr{
		Credential: s.cred,
		Setpgid:    true, // a terminal's Ctrl-C reaches us, and we stop it in order
		Pdeathsig:  syscall.SIGINT,
	}
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start postgres: %w", err)
	}
	go func() {
		p.waitErr = p.cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

func (s *Server) initdb(ctx context.Context, binDir, pgdata string, cred *syscall.Credential) error {
	cmd := exec.CommandContext(ctx, filepath.Join(binDir, "initdb"),
		"-D", pgdata, "-U", s.opts.Database, "--auth=trust", "--encoding=UTF8", "--locale=C.UTF-8", "--no-instructions")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	cmd.Dir = s.opts.Dir
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		// A half-made cluster would make every later start fail.
		_ = os.RemoveAll(pgdata)
		return fmt.Errorf("initdb: %w: %s", err, lastLines(out.String(), 5))
	}
	return nil
}

// waitReady polls until the server accepts connections, then creates the
// database when missing.
func (s *Server) waitReady(ctx context.Context, p *process) error {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	for {
		conn, err := pgx.Connect(ctx, s.connString("postgres"))
		if err == nil {
			defer conn.Close(ctx)
			return s.ensureDatabase(ctx, conn)
		}
		select {
		case <-p.done:
			return fmt.Errorf("embedded PostgreSQL exited: %v; its log %s says: %s", p.waitErr, s.logPath, s.logTail())
		case <-ctx.Done():
			return fmt.Errorf("embedded PostgreSQL did not accept connections in time (%w); its log %s says: %s", err, s.logPath, s.logTail())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func (s *Server) ensureDatabase(ctx context.Context, conn *pgx.Conn) error {
	var exists bool
	if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", s.opts.Database).Scan(&exists); err != nil {
		return fmt.Errorf("look up database: %w", err)
	}
	if exists {
		return nil
	}
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{s.opts.Database}.Sanitize()); err != nil {
		return fmt.Errorf("create database %s: %w", s.opts.Database, err)
	}
	return nil
}

// connString returns a libpq keyword/value connection string for db.
func (s *Server) connString(db string) string {
	return fmt.Sprintf("host=%s port=5432 user=%s dbname=%s sslmode=disable", s.sockDir, s.opts.Database, db)
}

// URL returns the connection string of the server's database.
func (s *Server) URL() string { return s.connString(s.opts.Database) }

// Shared reports whether another process runs the server (Start found it
// running): this one only connects to it.
func (s *Server) Shared() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.proc == nil
}

// URLFor returns the connection string of another database on the server.
func (s *Server) URLFor(db string) string { return s.connString(db) }

// Stop asks the server for a fast shutdown and waits for it to exit, killing
// it if ctx ends first. A server that another process started is left
// running.
func (s *Server) Stop(ctx context.Context) error {
	s.mu.Lock()
	s.stopping = true
	p := s.proc
	s.mu.Unlock()
	if p == nil || p.exited() {
		return nil
	}
	_ = p.cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-p.done:
		s.opts.Logger.Info("embedded PostgreSQL stopped")
		return nil
	case <-ctx.Done():
		_ = p.cmd.Process.Kill()
		<-p.done
		return fmt.Errorf("embedded PostgreSQL did not stop in time; killed it")
	}
}

// ErrDown says that the server this process started has exited.
var ErrDown = errors.New("embedded PostgreSQL is not running")

// Alive returns ErrDown while the server this process started is not
// running (exited, or being restarted by Watch). A server another process
// runs is not ours to judge: nil.
func (s *Server) Alive() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc != nil && (s.restarting || s.proc.exited()) {
		return ErrDown
	}
	return nil
}

// Watch restarts the server whenever it exits until ctx ends or Stop is
// called, waiting between attempts as backoff says and calling restarted
// after each restart. It returns an error when backoff's steps are used up
// without the server coming back: the caller should then exit, for a
// supervisor to restart the whole program. A server another process runs
// is not watched.
func (s *Server) Watch(ctx context.Context, backoff wait.Backoff, restarted func()) error {
	for {
		s.mu.Lock()
		p := s.proc
		s.mu.Unlock()
		if p == nil {
			<-ctx.Done()
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-p.done:
		}
		if s.isStopping() {
			return nil
		}
		s.opts.Logger.Error("embedded PostgreSQL exited; restarting it", "error", p.waitErr, "log", s.logPath, "log_tail", s.logTail())
		s.setRestarting(true)
		if err := s.restart(ctx, backoff); err != nil {
			return err
		}
		if ctx.Err() != nil || s.isStopping() {
			return nil
		}
		if restarted != nil {
			restarted()
		}
		s.setRestarting(false)
	}
}

// restart starts the server again, trying as often as backoff allows.
func (s *Server) restart(ctx context.Context, backoff wait.Backoff) error {
	var err error
	for attempt := 1; backoff.Steps > 0; attempt++ {
		delay := backoff.Step()
		s.opts.Logger.Warn("restarting embedded PostgreSQL", "attempt", attempt, "in", delay)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(delay):
		}
		if err = s.startAgain(ctx); err == nil {
			s.opts.Logger.Info("embedded PostgreSQL restarted", "attempt", attempt, "socket_dir", s.sockDir)
			return nil
		}
		if s.isStopping() {
			return nil
		}
		s.opts.Logger.Error("embedded PostgreSQL did not restart", "attempt", attempt, "error", err)
	}
	return fmt.Errorf("embedded PostgreSQL exited and did not restart: %w", err)
}

// startAgain launches a new postmaster, unless Stop was called, and waits
// until it is ready.
func (s *Server) startAgain(ctx context.Context) error {
	s.mu.Lock()
	if s.stopping {
		s.mu.Unlock()
		return ErrDown
	}
	p, err := s.launch()
	if err != nil {
		s.mu.Unlock()
		return err
	}
	s.proc = p
	s.mu.Unlock()
	if err := s.waitReady(ctx, p); err != nil {
		if !p.exited() {
			_ = p.cmd.Process.Kill()
			<-p.done
		}
		return err
	}
	return nil
}

func (s *Server) setRestarting(v bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.restarting = v
}

func (s *Server) isStopping() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stopping
}

func (s *Server) logTail() string {
	b, _ := os.ReadFile(s.logPath)
	return lastLines(string(b), 5)
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}

// socketDir picks where the socket goes: next to the data, unless that path
// would be too long for a Unix socket.
func socketDir(dir string) (string, error) {
	d := filepath.Join(dir, "run")
	if len(d)+1+len(socketFile) <= maxSocketPath {
		return d, nil
	}
	d, err := os.MkdirTemp("", "kubebyon-pg-")
	if err != nil {
		return "", fmt.Errorf("socket dir: %w", err)
	}
	return d, nil
}

// runAs returns the credential PostgreSQL runs with: nil (ourselves) unless
// we are root, which PostgreSQL refuses; then the 'postgres' user, or
// 'nobody'.
func runAs() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	for _, name := range []string{"postgres", "nobody"} {
		u, err := user.Lookup(name)
		if err != nil {
			continue
		}
		uid, _ := strconv.ParseUint(u.Uid, 10, 32)
		gid, _ := strconv.ParseUint(u.Gid, 10, 32)
		return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), NoSetGroups: true}, nil
	}
	return nil, errors.New("running as root, and neither a 'postgres' nor a 'nobody' user exists to run PostgreSQL as: create one, or run kubebyon as a normal user")
}

// chown gives dir to the server's user and makes sure that user can reach it
// through its parents.
func chown(dir string, cred *syscall.Credential) error {
	if cred == nil {
		return nil
	}
	if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
		return fmt.Errorf("chown %s: %w", dir, err)
	}
	for p := filepath.Dir(dir); p != "/"; p = filepath.Dir(p) {
		fi, err := os.Stat(p)
		if err != nil {
			return fmt.Errorf("stat %s: %w", p, err)
		}
		if fi.Mode().Perm()&0o001 == 0 {
			// Traverse only: others may not list the directory.
			if err := os.Chmod(p, fi.Mode().Perm()|0o001); err != nil {
				return fmt.Errorf("let PostgreSQL's user reach %s: %w", p, err)
			}
		}
	}
	return nil
}

// checkOwner returns an error that names the fix when the server's
// directory or its cluster exists but belongs to another user than the one
// PostgreSQL runs as: a volume made by a run under another uid, or a bind
// mount owned by the host's user. PostgreSQL would refuse it on every start
// with an error of its own. As root, dir is chowned to PostgreSQL's user
// afterwards; the cluster is not.
func checkOwner(dir, pgdata string, cred *syscall.Credential) error {
	uid, gid := uint32(os.Geteuid()), uint32(os.Getegid())
	paths := []string{dir, pgdata}
	if cred != nil {
		uid, gid = cred.Uid, cred.Gid
		paths = paths[1:]
	}
	for _, p := range paths {
		fi, err := os.Stat(p)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("stat %s: %w", p, err)
		}
		st, ok := fi.Sys().(*syscall.Stat_t)
		if !ok || st.Uid == uid {
			continue
		}
		return fmt.Errorf("%s is owned by uid %d, but PostgreSQL runs as uid %d here: give the directory to that user with 'chown -R %d:%d %s' (for a bind mount, on the host, at the host's path of it), or run kubebyon as uid %d (docker run --user %d)",
			p, st.Uid, uid, uid, gid, dir, st.Uid, st.Uid)
	}
	return nil
}
