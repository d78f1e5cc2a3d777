// Package idempotency keeps the first answer to each API request sent
// with an Idempotency-Key, so that the same request sent again (a client
// retrying after a timeout) is answered the same and done once. Keys are
// per user and kept for a day, as Stripe's are.
package idempotency

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/kubebyon/kubebyon/queries"
)

// MaxKeyLength bounds a key (Stripe's is 255).
const MaxKeyLength = 255

// Errors the API answers with.
var (
	// ErrKeyInvalid: empty, too long, or not printable ASCII.
	ErrKeyInvalid = errors.New("ErrIdempotencyKeyInvalid")
	// ErrKeyReused: the key was used for another request.
	ErrKeyReused = errors.New("ErrIdempotencyKeyReused")
	// ErrInFlight: the first request with the key is still running.
	ErrInFlight = errors.New("ErrIdempotencyKeyInFlight")
)

// Answer is a request's first answer.
type Answer struct {
	Status      int
	ContentType string
	Location    string
	Body        []byte
}

// Store keeps the answers.
type Store struct {
	Pool *pgxpool.Pool
	// Poll is how often Claim looks again at a key whose request is still
	// running; Wait how long it waits for it (default 100 ms and 10 s).
	Poll, Wait time.Duration
}

// ValidKey says whether key may be used: 1 to MaxKeyLength printable
// ASCII characters.
func ValidKey(key string) bool {
	if key == "" || len(key) > MaxKeyLength {
		return false
	}
	for i := 0; i < len(key); i++ {
		if key[i] < 0x20 || key[i] > 0x7e {
			return false
		}
	}
	return true
}

// Hash identifies a request: the same key with another request is
// ErrKeyReused.
func Hash(method, uri string, body []byte) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s %s\n", method, uri)
	h.Write(body)
	return hex.EncodeToString(h.Sum(nil))
}

// Claim takes the key for the request hash: claimed is true when the
// caller is to do the request and Finish or Release it. Otherwise the
// first answer is returned; if the first request with the key is still
// running, Claim waits for it, up to Wait (ErrInFlight after that).
func (s *Store) Claim(ctx context.Context, userID int64, key, hash string) (claimed bool, first Answer, err error) {
	poll, wait := s.Poll, s.Wait
	if poll == 0 {
		poll = 100 * time.Millisecond
	}
	if wait == 0 {
		wait = 10 * time.Second
	}
	deadline := time.Now().Add(wait)
	q := queries.New(s.Pool)
	for {
		_, err := q.IdempotencyClaim(ctx, queries.IdempotencyClaimParams{UserID: userID, Key: key, RequestHash: hash})
		if err == nil {
			return true, Answer{}, nil
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return false, Answer{}, fmt.Errorf("claim idempotency key: %w", err)
		}
		row, err := q.IdempotencyGet(ctx, queries.IdempotencyGetParams{UserID: userID, Key: key})
		if errors.Is(err, pgx.ErrNoRows) {
			// Released meanwhile: claim it again.
			continue
		}
		if err != nil {
			return false, Answer{}, fmt.Errorf("read idempotency key: %w", err)
		}
		if row.RequestHash != hash {
			return false, Answer{}, ErrKeyReused
		}
		if row.Status.Valid {
			return false, Answer{Status: int(row.Status.Int32), ContentType: row.ContentType, Location: row.Location, Body: row.Body}, nil
		}
		if time.Now().After(deadline) {
			return false, Answer{}, ErrInFlight
		}
		select {
		case <-ctx.Done():
			return false, Answer{}, ctx.Err()
		case <-time.After(poll):
		}
	}
}

// Finish keeps the answer of a claimed key's request.
func (s *Store) Finish(ctx context.Context, userID int64, key, hash string, a Answer) error {
	err := queries.New(s.Pool).IdempotencyFinish(ctx, queries.IdempotencyFinishParams{
		UserID: userID, Key: key, RequestHash: hash,
		Status: pgtype.Int4{Int32: int32(a.Status), Valid: true}, ContentType: a.ContentType, Location: a.Location, Body: a.Body,
	})
	if err != nil {
		return fmt.Errorf("keep the idempotent answer: %w", err)
	}
	return nil
}

// Release gives up a claimed key whose request failed on the server's
// side: the client may send it again, to be done then.
func (s *Store) Release(ctx context.Context, userID int64, key, hash string) error {
	err := queries.New(s.Pool).IdempotencyRelease(ctx, queries.IdempotencyReleaseParams{UserID: userID, Key: key, RequestHash: hash})
	if err != nil {
		return fmt.Errorf("release idempotency key: %w", err)
	}
	return nil
}
