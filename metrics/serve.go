package metrics

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"time"
)

// shutdownGrace bounds how long Serve waits for in-flight scrapes once its
// context is done.
const shutdownGrace = 5 * time.Second

// NormalizeAddr applies Serve's address rules without listening, for flag
// validation: it returns the address to bind, or an error whose message fits
// on one line. A bare port "9469" means "127.0.0.1:9469"; "host:port" is
// kept, with host an IP literal (IPv6 in brackets) or a host name; an empty
// host (":9469", all interfaces) is refused unless allowAll is true. An
// explicit unspecified address ("0.0.0.0:9469", "[::]:9469") counts as
// asking for all interfaces and is allowed.
func NormalizeAddr(addr string, allowAll bool) (string, error) {
	if addr == "" {
		return "", errors.New("empty metrics address; want PORT or HOST:PORT")
	}
	if isDigits(addr) {
		if err := checkPort(addr, addr); err != nil {
			return "", err
		}
		return net.JoinHostPort("127.0.0.1", addr), nil
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("invalid metrics address %q: want PORT or HOST:PORT", addr)
	}
	if err := checkPort(addr, port); err != nil {
		return "", err
	}
	if host == "" {
		if !allowAll {
			return "", fmt.Errorf("metrics address %q would listen on all interfaces; use 127.0.0.1:%s for loopback, or 0.0.0.0:%s to ask for all interfaces", addr, port, port)
		}
		return net.JoinHostPort("", port), nil
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		return net.JoinHostPort(ip.String(), port), nil
	}
	if !isHostname(host) {
		if lastLabelDigits(host) {
			return "", fmt.Errorf("invalid host %q in metrics address %q: not an IP address (want a.b.c.d, each 0-255), and no host name ends in a number", host, addr)
		}
		return "", fmt.Errorf("invalid host %q in metrics address %q", host, addr)
	}
	return net.JoinHostPort(host, port), nil
}

func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

func checkPort(addr, port string) error {
	if !isDigits(port) {
		return fmt.Errorf("invalid port %q in metrics address %q: want 0-65535", port, addr)
	}
	if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		return fmt.Errorf("invalid port %q in metrics address %q: want 0-65535", port, addr)
	}
	return nil
}

// isHostname reports whether h is a plausible DNS name: dot-separated labels
// of letters, digits and hyphens, not starting or ending with a hyphen, the
// last not all digits (no top-level domain is, RFC 3696 section 2): dotted
// numbers such as "256.1.1.1" or "127.1" are a mistyped IP address, which
// net.Listen would only refuse after a DNS lookup.
func isHostname(h string) bool {
	if len(h) > 253 || lastLabelDigits(h) {
		return false
	}
	h = trimSuffixDot(h)
	if h == "" {
		return false
	}
	start := 0
	for i := 0; i <= len(h); i++ {
		if i < len(h) && h[i] != '.' {
			c := h[i]
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return false
			}
			continue
		}
		label := h[start:i]
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		start = i + 1
	}
	return true
}

// lastLabelDigits reports whether the last label of h (a trailing dot
// aside) is all digits.
func lastLabelDigits(h string) bool {
	h = trimSuffixDot(h)
	if i := strings.LastIndexByte(h, '.'); i >= 0 {
		h = h[i+1:]
	}
	return isDigits(h)
}

func trimSuffixDot(h string) string {
	if len(h) > 0 && h[len(h)-1] == '.' {
		return h[:len(h)-1]
	}
	return h
}

// Serve listens on addr (see NormalizeAddr for the rules and allowAll) and
// serves h at /metrics, and health (when not nil) at /healthz, until ctx is
// done; other paths get 404. It returns the
// address actually listened on (useful with port 0) and a channel that is
// closed once the server has stopped: after ctx is done, in-flight requests
// get up to 5 seconds to finish. If serving fails on its own before that, the
// channel first yields the error. An error return means nothing is
// listening.
func Serve(ctx context.Context, addr string, allowAll bool, h, health http.Handler) (net.Addr, <-chan error, error) {
	if h == nil {
		return nil, nil, errors.New("metrics: nil handler")
	}
	bind, err := NormalizeAddr(addr, allowAll)
	if err != nil {
		return nil, nil, err
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", bind)
	if err != nil {
		return nil, nil, fmt.Errorf("metrics: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", h)
	if health != nil {
		mux.Handle("/healthz", health)
	}
	srv := &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       10 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       60 * time.Second,
		MaxHeaderBytes:    16 << 10,
	}
	errc := make(chan error, 1)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	go func() {
		defer close(errc)
		select {
		case err := <-served:
			// Serve only returns on its own for a listener failure.
			if err != nil && !errors.Is(err, http.ErrServerClosed) {
				errc <- fmt.Errorf("metrics: %w", err)
			}
			srv.Close()
			return
		case <-ctx.Done():
		}
		sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
		defer cancel()
		if err := srv.Shutdown(sctx); err != nil {
			srv.Close()
		}
		<-served
	}()
	return ln.Addr(), errc, nil
}

// Health answers a liveness or readiness probe from check: 200 "ok"
// while it returns nil, else 503 and the line of its error. Only GET and
// HEAD are answered.
func Health(check func(now time.Time) error) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		if err := check(time.Now()); err != nil {
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprintln(w, oneLine(err.Error()))
			return
		}
		fmt.Fprintln(w, "ok")
	})
}

// oneLine is s with its line breaks made spaces.
func oneLine(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '\n' || r == '\r' {
			return ' '
		}
		return r
	}, s)
}
