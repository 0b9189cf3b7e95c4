package sshrun

import (
	"bytes"
	"crypto/ed25519"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

// HostKeyKind says why a host key was refused.
type HostKeyKind string

const (
	// HostKeyUnknown: no known_hosts file lists the host and no key is pinned.
	HostKeyUnknown HostKeyKind = "unknown"
	// HostKeyChanged: the host is known (or pinned) with a different key.
	HostKeyChanged HostKeyKind = "changed"
	// HostKeyRevoked: a known_hosts file marks the key @revoked.
	HostKeyRevoked HostKeyKind = "revoked"
)

// HostKeyError says the server's host key could not be verified, so the
// connection was dropped before anything ran.
type HostKeyError struct {
	Host    string
	Address string
	Kind    HostKeyKind
	// KeyType and Fingerprint ("SHA256:…") describe the key the server offered.
	KeyType     string
	Fingerprint string
	// Expected lists the keys that were acceptable, as "where: type SHA256:…"
	// (where is file:line or "pinned"); empty for HostKeyUnknown.
	Expected []string
	// Checked lists the known_hosts files consulted, "(missing)" marking
	// those that do not exist.
	Checked []string
}

func (e *HostKeyError) Error() string {
	offered := e.KeyType + " " + e.Fingerprint
	switch e.Kind {
	case HostKeyChanged:
		return fmt.Sprintf("host key of %s (%s) has CHANGED: server offered %s but expected %s; this may be a man-in-the-middle attack, nothing was run",
			e.Host, e.Address, offered, strings.Join(e.Expected, " or "))
	case HostKeyRevoked:
		return fmt.Sprintf("host key of %s (%s) is revoked: server offered %s; nothing was run", e.Host, e.Address, offered)
	default:
		checked := "none"
		if len(e.Checked) > 0 {
			checked = strings.Join(e.Checked, ", ")
		}
		return fmt.Sprintf("host key of %s (%s) is unknown: server offered %s, which no known_hosts file lists (checked: %s); verify it out of band, then pin it or add it to known_hosts, or opt in to trust on first use; nothing was run",
			e.Host, e.Address, offered, checked)
	}
}

// hostKeys verifies host keys for one Config: against the pinned keys
// when there are any, otherwise against the known_hosts files, recording
// unknown keys when trust on first use is on.
type hostKeys struct {
	host   string
	pinned []ssh.PublicKey
	// files are the known_hosts files that exist; db checks against them.
	files []string
	db    ssh.HostKeyCallback
	// checked lists every configured file for error messages.
	checked []string
	// tofuFile receives first-use keys; empty when TOFU is off.
	tofuFile string
}

func newHostKeys(c Config) (*hostKeys, error) {
	h := &hostKeys{host: c.Name}
	for i, line := range c.PinnedHostKeys {
		k, _, _, _, err := ssh.ParseAuthorizedKey([]byte(line))
		if err != nil {
			return nil, fmt.Errorf("pinned host key %d of %s: %w", i+1, c.Name, err)
		}
		h.pinned = append(h.pinned, k)
	}
	if len(h.pinned) > 0 {
		return h, nil
	}
	for _, f := range c.KnownHostsFiles {
		_, err := os.Stat(f)
		switch {
		case err == nil:
			h.files = append(h.files, f)
			h.checked = append(h.checked, f)
		case errors.Is(err, os.ErrNotExist):
			h.checked = append(h.checked, f+" (missing)")
		default:
			return nil, fmt.Errorf("known_hosts file of %s: %w", c.Name, err)
		}
	}
	db, err := knownhosts.New(h.files...)
	if err != nil {
		return nil, fmt.Errorf("read known_hosts files of %s: %w", c.Name, err)
	}
	h.db = db
	if c.TrustOnFirstUse {
		if len(c.KnownHostsFiles) == 0 {
			return nil, fmt.Errorf("trust on first use for %s needs a known_hosts file to record keys in", c.Name)
		}
		h.tofuFile = c.KnownHostsFiles[0]
	}
	return h, nil
}

// check is an ssh.HostKeyCallback. address is the host:port that was dialed.
func (h *hostKeys) check(address string, remote net.Addr, key ssh.PublicKey) error {
	herr := &HostKeyError{Host: h.host, Address: address, KeyType: key.Type(), Fingerprint: ssh.FingerprintSHA256(key), Checked: h.checked}
	if len(h.pinned) > 0 {
		for _, p := range h.pinned {
			if bytes.Equal(p.Marshal(), key.Marshal()) {
				return nil
			}
			herr.Expected = append(herr.Expected, "pinned: "+p.Type()+" "+ssh.FingerprintSHA256(p))
		}
		herr.Kind = HostKeyChanged
		return herr
	}
	err := h.db(address, remote, key)
	if err == nil {
		return nil
	}
	var kerr *knownhosts.KeyError
	var rerr *knownhosts.RevokedError
	switch {
	case errors.As(err, &rerr):
		herr.Kind = HostKeyRevoked
		return herr
	case errors.As(err, &kerr) && len(kerr.Want) > 0:
		herr.Kind = HostKeyChanged
		for _, w := range kerr.Want {
			herr.Expected = append(herr.Expected, fmt.Sprintf("%s:%d: %s %s", w.Filename, w.Line, w.Key.Type(), ssh.FingerprintSHA256(w.Key)))
		}
		return herr
	case errors.As(err, &kerr):
		herr.Kind = HostKeyUnknown
		if h.tofuFile == "" {
			return herr
		}
		if err := recordHostKey(h.tofuFile, address, key); err != nil {
			return fmt.Errorf("trust %s on first use: %w", h.host, err)
		}
		return nil
	default:
		return fmt.Errorf("check host key of %s: %w", h.host, err)
	}
}

// algorithms returns the host key algorithms to ask the server for, so that
// a host known by its ed25519 key is not asked for its RSA key and then
// refused as "changed". Nil means the library's defaults.
func (h *hostKeys) algorithms(address string) []string {
	var keys []ssh.PublicKey
	if len(h.pinned) > 0 {
		keys = h.pinned
	} else {
		// knownhosts has no lookup, but a probe with a key nobody has makes
		// it list every key it knows for the address.
		var kerr *knownhosts.KeyError
		if err := h.db(address, probeAddr, probeKey); errors.As(err, &kerr) {
			for _, w := range kerr.Want {
				keys = append(keys, w.Key)
			}
		}
	}
	var algos []string
	seen := map[string]bool{}
	for _, k := range keys {
		for _, a := range algorithmsFor(k.Type()) {
			if !seen[a] {
				seen[a] = true
				algos = append(algos, a)
			}
		}
	}
	return algos
}

var (
	probeAddr   = &net.TCPAddr{IP: net.IPv4zero}
	probeKey, _ = ssh.NewPublicKey(ed25519.PublicKey(make([]byte, ed25519.PublicKeySize)))
)

// algorithmsFor maps a key type to the signature algorithms that use it: an
// RSA key signs with SHA-2 first.
func algorithmsFor(keyType string) []string {
	if keyType == ssh.KeyAlgoRSA {
		return []string{ssh.KeyAlgoRSASHA512, ssh.KeyAlgoRSASHA256, ssh.KeyAlgoRSA}
	}
	return []string{keyType}
}

// knownHostsMu serialises appends to known_hosts files in this process.
var knownHostsMu sync.Mutex

// recordHostKey appends an OpenSSH known_hosts line for address.
func recordHostKey(path, address string, key ssh.PublicKey) error {
	knownHostsMu.Lock()
	defer knownHostsMu.Unlock()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("create directory for %s: %w", path, err)
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("open %s: %w", path, err)
	}
	line := knownhosts.Line([]string{knownhosts.Normalize(address)}, key) + "\n"
	if _, err := f.WriteString(line); err != nil {
		_ = f.Close() // the write error is the one to report
		return fmt.Errorf("append to %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("close %s: %w", path, err)
	}
	return nil
}
