package cli

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"sigs.k8s.io/yaml"
)

// Config is what the client commands need to reach the platform, as saved
// by kubebyon login.
type Config struct {
	URL    string `json:"url"`
	APIKey string `json:"api_key"`
}

// Env reads an environment variable ("" when unset).
type Env func(string) string

// userConfigDir is os.UserConfigDir read from env rather than the
// process's environment (so that tests, and callers, choose it).
func userConfigDir(env Env) (string, error) {
	switch runtime.GOOS {
	case "windows", "darwin", "ios", "plan9":
		return os.UserConfigDir()
	}
	if d := env("XDG_CONFIG_HOME"); d != "" {
		if !filepath.IsAbs(d) {
			return "", errors.New("$XDG_CONFIG_HOME is a relative path")
		}
		return d, nil
	}
	if h := env("HOME"); h != "" {
		return filepath.Join(h, ".config"), nil
	}
	return "", errors.New("neither $XDG_CONFIG_HOME nor $HOME is set")
}

// homeDir is the user's home directory, $HOME first.
func homeDir(env Env) (string, error) {
	if h := env("HOME"); h != "" {
		return h, nil
	}
	return os.UserHomeDir()
}

// configPath is the config file: path when given, else
// <user config dir>/kubebyon/config.yaml.
func configPath(env Env, path string) (string, error) {
	if path != "" {
		return path, nil
	}
	dir, err := userConfigDir(env)
	if err != nil {
		return "", fmt.Errorf("find the config file: %w", err)
	}
	return filepath.Join(dir, "kubebyon", "config.yaml"), nil
}

// loadConfig reads the config file; a missing one is an empty Config.
func loadConfig(path string) (Config, error) {
	var c Config
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return c, nil
	}
	if err != nil {
		return c, fmt.Errorf("read the config: %w", err)
	}
	if err := yaml.UnmarshalStrict(b, &c); err != nil {
		return c, fmt.Errorf("read the config %s: %w", path, err)
	}
	return c, nil
}

// saveConfig writes the config file, readable by its owner only: it holds
// the API key.
func saveConfig(path string, c Config) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("save the config: %w", err)
	}
	b, err := yaml.Marshal(c)
	if err != nil {
		return fmt.Errorf("save the config: %w", err)
	}
	if err := writeFile(path, b); err != nil {
		return fmt.Errorf("save the config: %w", err)
	}
	return nil
}

// writeFile replaces path with b, mode 0600, through a temporary file in
// the same directory so that a failed write leaves the old file whole.
func writeFile(path string, b []byte) error {
	// Replace the file a symlink points at, not the symlink.
	if real, err := filepath.EvalSymlinks(path); err == nil {
		path = real
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name()) //nolint:errcheck // gone once renamed
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}

// settings are where a client command finds the platform: the config file,
// then the environment, then the flags, each over the one before.
type settings struct {
	configFile string // --config
	url        string // --url
	apiKey     string // --api-key
}

// errNotLoggedIn says how to set what is missing.
var errNotLoggedIn = errors.New("no platform URL or API key: run kubebyon login --url URL --api-key KEY (or set KUBEBYON_URL and KUBEBYON_API_KEY)")

// resolve is the Config the command uses.
func (s settings) resolve(env Env) (Config, error) {
	path, err := configPath(env, s.configFile)
	if err != nil {
		return Config{}, err
	}
	c, err := loadConfig(path)
	if err != nil {
		return c, err
	}
	if s.configFile != "" && c == (Config{}) {
		if _, err := os.Stat(path); err != nil {
			return c, fmt.Errorf("read the config: %w", err)
		}
	}
	for _, o := range []Config{{URL: env("KUBEBYON_URL"), APIKey: env("KUBEBYON_API_KEY")}, {URL: s.url, APIKey: s.apiKey}} {
		if o.URL != "" {
			c.URL = o.URL
		}
		if o.APIKey != "" {
			c.APIKey = o.APIKey
		}
	}
	c.URL = strings.TrimRight(c.URL, "/")
	if c.URL == "" || c.APIKey == "" {
		return c, errNotLoggedIn
	}
	return c, nil
}
