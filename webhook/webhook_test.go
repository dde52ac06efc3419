package webhook

import (
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The specification's test vector: its reference libraries produce this
// signature for this secret, id, time and body.
const (
	vectorSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	vectorID     = "msg_p5jXN8AQM9LWM0D4loKWxJek"
	vectorUnix   = 1614265330
	vectorBody   = `{"test": 2432232314}`
	vectorSig    = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
)

func TestSignMatchesTheSpecificationVector(t *testing.T) {
	sig, err := Sign(vectorSecret, vectorID, time.Unix(vectorUnix, 0), []byte(vectorBody))
	require.NoError(t, err)
	assert.Equal(t, vectorSig, sig)
	bare, err := Sign(strings.TrimPrefix(vectorSecret, SecretPrefix), vectorID, time.Unix(vectorUnix, 0), []byte(vectorBody))
	require.NoError(t, err)
	assert.Equal(t, vectorSig, bare, "the whsec_ prefix is optional")
}

func vectorHeader() http.Header {
	h := http.Header{}
	h.Set(HeaderID, vectorID)
	h.Set(HeaderTimestamp, strconv.Itoa(vectorUnix))
	h.Set(HeaderSignature, vectorSig)
	return h
}

// TestVerify: a genuine POST verifies; a changed body, id, timestamp or
// signature, a stale or future timestamp, missing headers and a wrong
// secret do not, each with its own error.
func TestVerify(t *testing.T) {
	sent := time.Unix(vectorUnix, 0)
	body := []byte(vectorBody)
	require.NoError(t, verify(vectorSecret, vectorHeader(), body, 0, sent.Add(4*time.Minute)), "within the default tolerance")
	require.NoError(t, verify(vectorSecret, vectorHeader(), body, time.Hour, sent.Add(-59*time.Minute)), "within a given tolerance")

	other := NewSecret()
	rotated := vectorHeader()
	rotated.Set(HeaderSignature, "v1,Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc= v2,abc "+vectorSig)
	require.NoError(t, verify(vectorSecret, rotated, body, 0, sent), "one of several signatures matches")

	for _, c := range []struct {
		name   string
		secret string
		edit   func(h http.Header)
		body   string
		now    time.Time
		want   error
	}{
		{name: "changed body", body: `{"test": 2432232315}`, want: ErrSignature},
		{name: "changed id", edit: func(h http.Header) { h.Set(HeaderID, "msg_other") }, want: ErrSignature},
		{name: "changed timestamp", edit: func(h http.Header) { h.Set(HeaderTimestamp, strconv.Itoa(vectorUnix+1)) }, want: ErrSignature},
		{name: "another secret", secret: other, want: ErrSignature},
		{name: "not v1", edit: func(h http.Header) { h.Set(HeaderSignature, "v2,"+strings.TrimPrefix(vectorSig, "v1,")) }, want: ErrSignature},
		{name: "garbage signature", edit: func(h http.Header) { h.Set(HeaderSignature, "v1,!!!") }, want: ErrSignature},
		{name: "replayed late", now: sent.Add(5*time.Minute + time.Second), want: ErrTimestamp},
		{name: "from the future", now: sent.Add(-5*time.Minute - time.Second), want: ErrTimestamp},
		{name: "timestamp not seconds", edit: func(h http.Header) { h.Set(HeaderTimestamp, "2021-02-25T15:02:10Z") }, want: ErrTimestamp},
		{name: "no id", edit: func(h http.Header) { h.Del(HeaderID) }, want: ErrMissingHeaders},
		{name: "no signature", edit: func(h http.Header) { h.Del(HeaderSignature) }, want: ErrMissingHeaders},
		{name: "no timestamp", edit: func(h http.Header) { h.Del(HeaderTimestamp) }, want: ErrMissingHeaders},
		{name: "malformed secret", secret: "whsec_not base64!", want: ErrSecret},
		{name: "empty secret", secret: "whsec_", want: ErrSecret},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := vectorHeader()
			if c.edit != nil {
				c.edit(h)
			}
			secret := vectorSecret
			if c.secret != "" {
				secret = c.secret
			}
			b := body
			if c.body != "" {
				b = []byte(c.body)
			}
			now := sent
			if !c.now.IsZero() {
				now = c.now
			}
			err := verify(secret, h, b, 0, now)
			require.Error(t, err)
			assert.True(t, errors.Is(err, c.want), "%v is not %v", err, c.want)
			if key := strings.TrimPrefix(secret, SecretPrefix); key != "" {
				assert.NotContains(t, err.Error(), key, "the error shows no secret")
			}
		})
	}
}

// TestVerifyUsesTheWallClock: Verify checks against time.Now.
func TestVerifyUsesTheWallClock(t *testing.T) {
	secret := NewSecret()
	body := []byte(`{"event":"job.buried"}`)
	now := time.Now()
	sig, err := Sign(secret, "msg_1", now, body)
	require.NoError(t, err)
	h := http.Header{}
	h.Set(HeaderID, "msg_1")
	h.Set(HeaderTimestamp, strconv.FormatInt(now.Unix(), 10))
	h.Set(HeaderSignature, sig)
	require.NoError(t, Verify(secret, h, body, 0))
	h.Set(HeaderTimestamp, strconv.FormatInt(now.Add(-time.Hour).Unix(), 10))
	assert.ErrorIs(t, Verify(secret, h, body, 0), ErrTimestamp)
}

func TestNewSecret(t *testing.T) {
	a, b := NewSecret(), NewSecret()
	assert.NotEqual(t, a, b)
	assert.True(t, strings.HasPrefix(a, SecretPrefix), a)
	key, err := decodeSecret(a)
	require.NoError(t, err)
	assert.Len(t, key, secretBytes)
}
