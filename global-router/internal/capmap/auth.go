package capmap

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"math"
	"mime"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/switchyard-dev/switchyard/contract"
	"github.com/switchyard-dev/switchyard/contract/openai"
)

// CookieName is the session cookie's name.
const CookieName = "switchyard_map_session"

// maxLoginBytes bounds a login form.
const maxLoginBytes = 4 << 10

// session is one logged-in browser: the token it logged in with (checked again on every use, so
// a token rotated out ends its sessions) and when it expires.
type session struct {
	token   string
	expires time.Time
}

// sessions are the open sessions, keyed by the SHA-256 digest of their cookie value (a lookup
// then reveals nothing of the values by its timing). At most max are kept.
type sessions struct {
	mu   sync.Mutex
	byID map[[sha256.Size]byte]session
	max  int
	ttl  time.Duration
	now  func() time.Time
	// evicted counts sessions dropped to make room.
	evicted uint64
}

func newSessions(maxSessions int, ttl time.Duration, now func() time.Time) *sessions {
	return &sessions{byID: map[[sha256.Size]byte]session{}, max: maxSessions, ttl: ttl, now: now}
}

// open starts a session for token and returns its cookie value (32 random bytes, hex).
func (ss *sessions) open(token string) (string, error) {
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return "", err
	}
	id := hex.EncodeToString(raw)
	now := ss.now()
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if len(ss.byID) >= ss.max {
		ss.dropExpired(now)
	}
	for len(ss.byID) >= ss.max {
		ss.dropFirstExpiring()
	}
	ss.byID[sha256.Sum256([]byte(id))] = session{token: token, expires: now.Add(ss.ttl)}
	return id, nil
}

func (ss *sessions) dropExpired(now time.Time) {
	for k, s := range ss.byID {
		if !now.Before(s.expires) {
			delete(ss.byID, k)
		}
	}
}

func (ss *sessions) dropFirstExpiring() {
	var first [sha256.Size]byte
	var at time.Time
	for k, s := range ss.byID {
		if at.IsZero() || s.expires.Before(at) {
			first, at = k, s.expires
		}
	}
	delete(ss.byID, first)
	ss.evicted++
}

// get returns the session of a cookie value, if it is open and not expired.
func (ss *sessions) get(id string) (session, bool) {
	key := sha256.Sum256([]byte(id))
	ss.mu.Lock()
	defer ss.mu.Unlock()
	s, ok := ss.byID[key]
	if ok && !ss.now().Before(s.expires) {
		delete(ss.byID, key)
		return session{}, false
	}
	return s, ok
}

// close ends the session of a cookie value.
func (ss *sessions) close(id string) {
	key := sha256.Sum256([]byte(id))
	ss.mu.Lock()
	defer ss.mu.Unlock()
	delete(ss.byID, key)
}

// count returns the sessions kept now and how many were dropped to make room.
func (ss *sessions) count() (open int, evicted uint64) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return len(ss.byID), ss.evicted
}

// session returns the request's session when its cookie names an open session whose token is
// still accepted.
func (s *Server) session(r *http.Request) (session, bool) {
	c, err := r.Cookie(CookieName)
	if err != nil || c.Value == "" || len(c.Value) > 128 {
		return session{}, false
	}
	sess, ok := s.sessions.get(c.Value)
	if !ok {
		return session{}, false
	}
	if !s.deps.Tokens.ValidToken(sess.token) {
		s.sessions.close(c.Value)
		return session{}, false
	}
	return sess, true
}

// authorized reports whether r carries a live session; if not, it answers 401 and counts it.
func (s *Server) authorized(w http.ResponseWriter, r *http.Request) bool {
	if _, ok := s.session(r); ok {
		return true
	}
	s.metrics.refused.WithLabelValues(reasonUnauthenticated).Inc()
	unauthenticated.Write(w)
	return false
}

// refuseCrossOrigin checks that a POST comes from the map's own origin (Sec-Fetch-Site, else Origin
// against Host), as net/http's CrossOriginProtection does; when it does not, it answers 403, counts
// and logs it, and returns true.
func (s *Server) refuseCrossOrigin(w http.ResponseWriter, r *http.Request) bool {
	if err := http.NewCrossOriginProtection().Check(r); err != nil {
		s.metrics.refused.WithLabelValues(reasonCrossOrigin).Inc()
		s.log.Warn("capacity map: cross-origin request refused", "path", r.URL.Path, "remote", r.RemoteAddr,
			"origin", cut(r.Header.Get("Origin"), 256), "sec_fetch_site", cut(r.Header.Get("Sec-Fetch-Site"), 64))
		(&openai.Error{Status: http.StatusForbidden, Type: openai.TypeInvalidRequest, Code: contract.ReasonBadRequest,
			Message: "capacity map: cross-origin request refused"}).Write(w)
		return true
	}
	return false
}

// serveLogin checks the posted token and opens a session: 303 to the map with the session
// cookie, or the form again with 401.
func (s *Server) serveLogin(w http.ResponseWriter, r *http.Request) {
	if s.refuseCrossOrigin(w, r) {
		return
	}
	if ok, wait := s.logins.take(); !ok {
		s.metrics.refused.WithLabelValues(reasonLoginRate).Inc()
		s.log.Warn("capacity map: login refused, too many attempts", "remote", r.RemoteAddr)
		(&openai.Error{Status: http.StatusTooManyRequests, Type: openai.TypeRateLimit,
			Code: contract.ReasonRateLimitExceeded, Message: "capacity map: too many login attempts; retry later",
			RetryAfterSeconds: openai.RetryAfter(wait)}).Write(w)
		return
	}
	if ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); ct != "application/x-www-form-urlencoded" {
		s.badLogin(w, "the login form must be posted as application/x-www-form-urlencoded")
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxLoginBytes)
	if err := r.ParseForm(); err != nil {
		s.badLogin(w, "the login form cannot be read (at most 4 KiB)")
		return
	}
	token := strings.TrimSpace(r.PostForm.Get("token"))
	if token == "" || !s.deps.Tokens.ValidToken(token) {
		s.metrics.logins.WithLabelValues(loginRefused).Inc()
		s.log.Warn("capacity map: login refused, invalid token", "remote", r.RemoteAddr)
		render(w, http.StatusUnauthorized, loginHTML, loginPage{Region: s.cfg.Region,
			Error: "That is not an accepted admin token."})
		return
	}
	id, err := s.sessions.open(token)
	if err != nil {
		(&openai.Error{Status: http.StatusServiceUnavailable, Type: openai.TypeServiceUnavailable,
			Message: "capacity map: open session: " + err.Error()}).Write(w)
		return
	}
	s.metrics.logins.WithLabelValues(loginOK).Inc()
	s.log.Info("capacity map: logged in", "remote", r.RemoteAddr)
	http.SetCookie(w, s.cookie(r, id, int(math.Ceil(s.cfg.SessionTTL.Seconds()))))
	http.Redirect(w, r, Prefix, http.StatusSeeOther)
}

// badLogin answers a login form that cannot be read: 400, counted and logged.
func (s *Server) badLogin(w http.ResponseWriter, why string) {
	s.metrics.refused.WithLabelValues(reasonBadRequest).Inc()
	s.log.Warn("capacity map: login refused, bad form", "reason", why)
	(&openai.Error{Status: http.StatusBadRequest, Type: openai.TypeInvalidRequest, Code: contract.ReasonBadRequest,
		Message: "capacity map: " + why}).Write(w)
}

// serveLogout ends the session and sends the browser to the login form.
func (s *Server) serveLogout(w http.ResponseWriter, r *http.Request) {
	if s.refuseCrossOrigin(w, r) {
		return
	}
	if c, err := r.Cookie(CookieName); err == nil {
		s.sessions.close(c.Value)
	}
	http.SetCookie(w, s.cookie(r, "", -1))
	http.Redirect(w, r, Prefix+"login", http.StatusSeeOther)
}

// cookie is the session cookie with value id: HttpOnly, SameSite=Strict, for the map's paths
// only, Secure when the request came over TLS; maxAge < 0 deletes it.
func (s *Server) cookie(r *http.Request, id string, maxAge int) *http.Cookie {
	return &http.Cookie{Name: CookieName, Value: id, Path: Prefix, MaxAge: maxAge, HttpOnly: true,
		Secure: r.TLS != nil, SameSite: http.SameSiteStrictMode}
}

// bucket is a token bucket: rate tokens a second, at most burst.
type bucket struct {
	mu     sync.Mutex
	rate   float64
	burst  float64
	tokens float64
	last   time.Time
	now    func() time.Time
}

func newBucket(rate float64, burst int, now func() time.Time) *bucket {
	return &bucket{rate: rate, burst: float64(burst), tokens: float64(burst), last: now(), now: now}
}

// take spends one token; without one it returns false and how long until one is there.
func (b *bucket) take() (bool, time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.now()
	b.tokens = min(b.burst, b.tokens+now.Sub(b.last).Seconds()*b.rate)
	b.last = now
	if b.tokens < 1 {
		return false, time.Duration((1 - b.tokens) / b.rate * float64(time.Second))
	}
	b.tokens--
	return true, 0
}

// cut bounds a client-supplied string that is logged.
func cut(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}
