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
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
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
	cmd     *exec.Cmd
	done    chan struct{}
	waitErr error
	opts    Options
	sockDir string
	logPath string
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
	s := &Server{opts: opts, done: make(chan struct{}), logPath: filepath.Join(dir, "postgres.log")}
	if s.sockDir, err = socketDir(dir); err != nil {
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
			close(s.done)
			return s, nil
		}
	}

	if _, err := os.Stat(filepath.Join(pgdata, "PG_VERSION")); errors.Is(err, os.ErrNotExist) {
		opts.Logger.Info("initialising embedded PostgreSQL", "dir", pgdata)
		if err := s.initdb(ctx, binDir, pgdata, cred); err != nil {
			return nil, err
		}
	}

	logFile, err := os.OpenFile(s.logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open postgres log: %w", err)
	}
	defer logFile.Close()

	args := []string{"-D", pgdata,
		"-c", "listen_addresses=",
		"-c", "unix_socket_directories=" + s.sockDir,
		"-c", "unix_socket_permissions=0700",
		"-c", "logging_collector=off",
	}
	keys := make([]string, 0, len(opts.Settings))
	for k := range opts.Settings {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		args = append(args, "-c", k+"="+opts.Settings[k])
	}
	s.cmd = exec.Command(filepath.Join(binDir, "postgres"), args...)
	s.cmd.Stdout, s.cmd.Stderr = logFile, logFile
	s.cmd.SysProcAttr = &syscall.SysProcAttr{
		Credential: cred,
		Setpgid:    true, // a terminal's Ctrl-C reaches us, and we stop it in order
		Pdeathsig:  syscall.SIGINT,
	}
	if err := s.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start postgres: %w", err)
	}
	go func() {
		s.waitErr = s.cmd.Wait()
		close(s.done)
	}()

	if err := s.waitReady(ctx); err != nil {
		_ = s.Stop(context.Background())
		return nil, err
	}
	opts.Logger.Info("embedded PostgreSQL ready", "socket_dir", s.sockDir)
	return s, nil
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
func (s *Server) waitReady(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	for {
		conn, err := pgx.Connect(ctx, s.connString("postgres"))
		if err == nil {
			defer conn.Close(ctx)
			return s.ensureDatabase(ctx, conn)
		}
		select {
		case <-s.done:
			return fmt.Errorf("embedded PostgreSQL exited: %v; its log %s says: %s", s.waitErr, s.logPath, s.logTail())
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

// URLFor returns the connection string of another database on the server.
func (s *Server) URLFor(db string) string { return s.connString(db) }

// Stop asks the server for a fast shutdown and waits for it to exit, killing
// it if ctx ends first. A server that another process started is left
// running.
func (s *Server) Stop(ctx context.Context) error {
	select {
	case <-s.done:
		return nil
	default:
	}
	_ = s.cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-s.done:
		s.opts.Logger.Info("embedded PostgreSQL stopped")
		return nil
	case <-ctx.Done():
		_ = s.cmd.Process.Kill()
		<-s.done
		return fmt.Errorf("embedded PostgreSQL did not stop in time; killed it")
	}
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
