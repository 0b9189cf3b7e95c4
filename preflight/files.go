package preflight

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"syscall"

	"github.com/runbot/runbot/internal/yamlnode"
	"github.com/runbot/runbot/inventory"
)

// Files reports, at the key that names it, each local file serve would
// read and cannot: a host's identity files, known_hosts files and
// passphrase file, and the directory of a SQLite store. One that does not
// exist is an error, since every run on that host would fail (or the
// store would not open); one that exists but this user cannot read is a
// warning unless required, as for Secrets: --check may run as another
// user than the service. Each message names the absolute path it tried,
// since a relative path is read from the directory of the file that
// names it, not from where runbot was started. With an inventory override
// the hosts' files are not looked for, and with any override neither is
// the store's directory: the config is then checked before it is
// installed, and those paths are the target host's.
func Files(p *Plan, required bool) yamlnode.Problems {
	unreadable := yamlnode.Warning
	if required {
		unreadable = yamlnode.Error
	}
	var ps yamlnode.Problems
	add := func(file string, at yamlnode.Pos, severity yamlnode.Severity, format string, args ...any) {
		ps = append(ps, yamlnode.Problem{File: file, Line: at.Line, Col: at.Col, Severity: severity, Msg: fmt.Sprintf(format, args...)})
	}
	if p.Inventory != nil && p.Overrides.Inventory == "" {
		for _, h := range sortedHosts(p.Inventory) {
			if h.Transport != "ssh" {
				continue // a local host is reached without SSH
			}
			file := func(key, what, path string) {
				abs, err := readable(path)
				switch {
				case errors.Is(err, fs.ErrNotExist):
					add(p.Inventory.File, h.Pos(key), yamlnode.Error, "host %s: %s %s does not exist: every run on the host would fail", h.Name, what, abs)
				case err != nil:
					add(p.Inventory.File, h.Pos(key), unreadable, "host %s: %s %s cannot be read: %v", h.Name, what, abs, err)
				}
			}
			for i, f := range h.IdentityFiles {
				file(fmt.Sprintf("identity_files.%d", i), "identity file", f)
			}
			// Pinned host keys are checked instead of known_hosts, and
			// trust on first use creates the file it records the key in.
			if len(h.HostKeys) == 0 && !h.TrustOnFirstUse {
				for i, f := range h.KnownHosts {
					file(fmt.Sprintf("known_hosts.%d", i), "known_hosts file", f)
				}
			}
			if h.PassphraseFile != "" {
				file("passphrase_file", "passphrase file", h.PassphraseFile)
			}
		}
	}
	if path := p.Config.SQLitePath(); path != "" && p.Overrides.Inventory == "" && p.Overrides.Runbooks == nil {
		at := p.Config.At.Of("store")
		want := abs(filepath.Dir(path))
		dir, err := existingDir(want)
		switch {
		case err != nil:
			add(p.Config.File, at, yamlnode.Error, "store: the directory of %s cannot be created: %v", abs(path), err)
		case dir != want:
			// The store's directory does not exist yet. The service makes
			// it (the shipped unit's StateDirectory=, or an install step),
			// as a user this check may not be, so that this user could not
			// create it proves nothing; serve says so at start if it
			// cannot either. Warning about it here would warn on every
			// install that follows the guide.
		default:
			if err := usableDir(dir); err != nil {
				add(p.Config.File, at, unreadable, "store: directory %s cannot be written: %v", dir, err)
			}
		}
	}
	return ps
}

// readable opens path for reading and closes it; it returns the absolute
// path it tried and why it cannot be read. A directory cannot be read as
// a file either, whatever os.Open says of it.
func readable(path string) (string, error) {
	a := abs(path)
	f, err := os.Open(a)
	if err != nil {
		return a, err
	}
	defer func() { _ = f.Close() }() // opened only to know it can be
	if fi, err := f.Stat(); err != nil {
		return a, err
	} else if fi.IsDir() {
		return a, errors.New("it is a directory")
	}
	return a, nil
}

// existingDir walks up from dir to the first part of it that exists, which
// serve creates the rest of the store's directory in; it is an error when
// that part is not a directory.
func existingDir(dir string) (string, error) {
	dir = abs(dir)
	for {
		fi, err := os.Stat(dir)
		switch {
		case err == nil && fi.IsDir():
			return dir, nil
		case err == nil:
			return "", fmt.Errorf("%s is not a directory", dir)
		case !errors.Is(err, fs.ErrNotExist):
			return "", err
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", err
		}
		dir = parent
	}
}

// wOK is access(2)'s mode bit for "may write".
const wOK = 0x2

// usableDir reports whether this user can list dir and create files in
// it, as opening the store does.
func usableDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	_ = f.Close() // opened only to know it can be
	if err := syscall.Access(dir, wOK); err != nil {
		return fmt.Errorf("access %s: %w", dir, err)
	}
	return nil
}

// abs is path made absolute for a message, or path itself when the
// working directory is gone.
func abs(path string) string {
	a, err := filepath.Abs(path)
	if err != nil {
		return path
	}
	return a
}

// sortedHosts are the inventory's hosts by name, so that problems come in
// the same order every time before they are sorted by position.
func sortedHosts(inv *inventory.Inventory) []*inventory.Host {
	hosts := make([]*inventory.Host, 0, len(inv.Hosts))
	for _, name := range slices.Sorted(maps.Keys(inv.Hosts)) {
		hosts = append(hosts, inv.Hosts[name])
	}
	return hosts
}
