package web

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"regexp"
	"strings"

	"github.com/runbot/runbot/store"
)

// ProxyTrust lets an authenticating reverse proxy vouch for who is asking:
// the user named in Header is believed only on requests whose peer address
// is in From. A request from anywhere else that carries the header is
// treated as if it did not.
type ProxyTrust struct {
	Header string
	From   []netip.Prefix
}

// user returns the proxy-vouched user of r, or "".
func (p *ProxyTrust) user(r *http.Request) string {
	if p == nil || p.Header == "" {
		return ""
	}
	name := strings.TrimSpace(r.Header.Get(p.Header))
	if name == "" {
		return ""
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	addr, err := netip.ParseAddr(host)
	if err != nil {
		return ""
	}
	addr = addr.Unmap()
	for _, pre := range p.From {
		if pre.Contains(addr) {
			return name
		}
	}
	return ""
}

// visitor is who a request is, as far as the site is concerned.
type visitor struct {
	// User is set when a trusted proxy vouched for the request: it may
	// see every run and the run list.
	User string
	// Link is the verified link parameter the request carried: it may
	// see the one run it was signed for, and carries it on to that
	// run's picture and postmortem.
	Link string
}

// errListNeedsSignIn refuses the run list to a request with only a link.
var errListNeedsSignIn = errors.New("the run list is shown only to people signed in through the site's authenticating proxy")

// who decides whether r may see run runID ("" for the run list).
// runIDPattern is what a run id, or a prefix of one, looks like:
// r-20261203-224327-8f1994.
var runIDPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9-]{0,63}$`)

func (s *Site) who(r *http.Request, runID string) (visitor, error) {
	if runID != "" && !runIDPattern.MatchString(runID) {
		// Not a run id (or a prefix of one), signed in or not: the store
		// is not asked, and the answer is the one for an unknown run.
		return visitor{}, fmt.Errorf("run id %.40q: %w", runID, store.ErrNotFound)
	}
	if u := s.proxy.user(r); u != "" {
		return visitor{User: u}, nil
	}
	if runID == "" {
		return visitor{}, errListNeedsSignIn
	}
	if s.signer == nil {
		return visitor{}, ErrNoLink
	}
	l := r.URL.Query().Get(linkParam)
	if err := s.signer.Verify(runID, l); err != nil {
		return visitor{}, err
	}
	return visitor{Link: l}, nil
}
