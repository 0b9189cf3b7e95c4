package sshrun

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"
)

// auth is the public-key authentication for one dial. Close releases the
// agent connection once the handshake is over.
type auth struct {
	method ssh.AuthMethod
	agent  net.Conn
}

func (a *auth) Close() {
	if a.agent != nil {
		_ = a.agent.Close() // the handshake is over; nothing depends on the close
	}
}

// newAuth gathers the signers of c: identity files (with their certificates)
// first, then the agent's keys. Problems with single keys are only reported
// when no key at all is usable, as OpenSSH does.
func newAuth(ctx context.Context, c Config) (*auth, error) {
	var signers []ssh.Signer
	var problems []string
	for _, path := range c.IdentityFiles {
		s, err := loadIdentity(path, c)
		if err != nil {
			problems = append(problems, err.Error())
			continue
		}
		signers = append(signers, s...)
	}
	a := &auth{}
	if c.UseAgent {
		sock := os.Getenv("SSH_AUTH_SOCK")
		if sock == "" {
			problems = append(problems, "use_agent is set but SSH_AUTH_SOCK is empty")
		} else if conn, err := (&net.Dialer{Timeout: c.ConnectTimeout}).DialContext(ctx, "unix", sock); err != nil {
			problems = append(problems, fmt.Sprintf("connect to ssh agent: %v", err))
		} else {
			a.agent = conn
			fromAgent, err := agent.NewClient(conn).Signers()
			if err != nil {
				problems = append(problems, fmt.Sprintf("list ssh agent keys: %v", err))
			}
			signers = append(signers, fromAgent...)
		}
	}
	if len(signers) == 0 {
		a.Close()
		if len(problems) == 0 {
			problems = append(problems, "no identity file is configured and the agent is not used")
		}
		return nil, fmt.Errorf("no usable ssh key for %s: %s", c.Name, strings.Join(problems, "; "))
	}
	a.method = ssh.PublicKeys(signers...)
	return a, nil
}

// decrypted keeps keys decrypted in this process, so that a fan-out to many
// hosts with one passphrase-protected key runs the slow key derivation
// once. It is keyed by a hash of the key file and the passphrase together,
// so a config with a wrong or missing passphrase never gets the key.
var decrypted sync.Map // [sha256.Size]byte -> ssh.Signer

// loadIdentity parses one private key file, decrypting it when needed, and
// pairs it with a certificate at path+"-cert.pub" when one exists.
func loadIdentity(path string, c Config) ([]ssh.Signer, error) {
	pem, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read identity file %s: %w", path, err)
	}
	signer, err := ssh.ParsePrivateKey(pem)
	var missing *ssh.PassphraseMissingError
	if errors.As(err, &missing) {
		signer, err = decrypt(path, pem, c)
		if err != nil {
			return nil, err
		}
	} else if err != nil {
		return nil, fmt.Errorf("parse identity file %s: %w", path, err)
	}
	cert, err := loadCertificate(path+"-cert.pub", signer)
	if err != nil {
		return nil, err
	}
	if cert != nil {
		// Offer the certificate first: servers that trust the CA accept it
		// without the plain key being in authorized_keys.
		return []ssh.Signer{cert, signer}, nil
	}
	return []ssh.Signer{signer}, nil
}

func decrypt(path string, pem []byte, c Config) (ssh.Signer, error) {
	pass, err := passphrase(c)
	if err != nil {
		return nil, fmt.Errorf("identity file %s is encrypted: %w", path, err)
	}
	h := sha256.New()
	h.Write(pem)
	h.Write([]byte{0})
	h.Write(pass)
	var key [sha256.Size]byte
	h.Sum(key[:0])
	if s, ok := decrypted.Load(key); ok {
		return s.(ssh.Signer), nil
	}
	signer, err := ssh.ParsePrivateKeyWithPassphrase(pem, pass)
	if err != nil {
		// The x/crypto error never contains the passphrase, but it can be
		// vague, so say plainly what most likely happened.
		return nil, fmt.Errorf("decrypt identity file %s (wrong passphrase?): %w", path, err)
	}
	decrypted.Store(key, signer)
	return signer, nil
}

// loadCertificate returns nil, nil when there is no certificate file.
func loadCertificate(path string, signer ssh.Signer) (ssh.Signer, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read certificate %s: %w", path, err)
	}
	pub, _, _, _, err := ssh.ParseAuthorizedKey(b)
	if err != nil {
		return nil, fmt.Errorf("parse certificate %s: %w", path, err)
	}
	cert, ok := pub.(*ssh.Certificate)
	if !ok {
		return nil, fmt.Errorf("certificate %s holds a plain key, not a certificate", path)
	}
	cs, err := ssh.NewCertSigner(cert, signer)
	if err != nil {
		return nil, fmt.Errorf("certificate %s does not match its key: %w", path, err)
	}
	return cs, nil
}

// passphrase reads the configured passphrase. Errors name where it was
// looked for, never what was found.
func passphrase(c Config) ([]byte, error) {
	switch {
	case c.PassphraseEnv != "":
		v, ok := os.LookupEnv(c.PassphraseEnv)
		if !ok {
			return nil, fmt.Errorf("passphrase environment variable %s is not set", c.PassphraseEnv)
		}
		return []byte(v), nil
	case c.PassphraseFile != "":
		b, err := os.ReadFile(c.PassphraseFile)
		if err != nil {
			return nil, fmt.Errorf("read passphrase file: %w", err)
		}
		line, _, _ := bufio.NewReader(bytes.NewReader(b)).ReadLine()
		return line, nil
	default:
		return nil, errors.New("no passphrase is configured (set a passphrase environment variable or file)")
	}
}
