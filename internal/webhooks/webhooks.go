// Package webhooks sends notifications to webhooks: a generic JSON webhook
// (signed with HMAC-SHA256) and the incoming webhooks of Slack, DingTalk,
// Feishu/Lark and WeCom. An organization's owners and admins add its
// channels, which receive its clusters' events (and, in a personal
// organization, its user's own); admins add the platform's, which receive
// the operator alerts. Each delivery is a River
// job (notify.WebhookArgs) whose attempts are logged per channel; every
// connection is checked against internal addresses (Guard).
package webhooks

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"

	"github.com/kubebyon/kubebyon/internal/adminauth"
	"github.com/kubebyon/kubebyon/internal/audit"
	"github.com/kubebyon/kubebyon/internal/input"
	"github.com/kubebyon/kubebyon/internal/locale"
	"github.com/kubebyon/kubebyon/internal/notify"
	"github.com/kubebyon/kubebyon/internal/orgs"
	"github.com/kubebyon/kubebyon/internal/secrets"
	"github.com/kubebyon/kubebyon/queries"
)

// MaxChannels is how many channels an organization may have.
const MaxChannels = 10

// Attempt statuses in the delivery log.
const (
	StatusDelivered = "delivered"
	StatusRetrying  = "retrying"
	StatusFailed    = "failed"
)

// TestKind is the event kind of a test message.
const TestKind = "test"

// Audit actions.
const (
	ActionCreate         = "webhook.create"
	ActionDelete         = "webhook.delete"
	ActionTest           = "webhook.test"
	ActionPlatformCreate = "admin.webhook_create"
	ActionPlatformDelete = "admin.webhook_delete"
	ActionPlatformTest   = "admin.webhook_test"
	ActionNetworkUpdate  = "admin.webhook_network_update"
)

// Form fields.
const (
	FieldName    = "name"
	FieldKind    = "kind"
	FieldURL     = "url"
	FieldSecret  = "secret"
	FieldAllowed = "allowedCIDRs"
)

// ErrNotFound is a channel that does not exist or is not the asker's
// organization's.
var ErrNotFound = errors.New("webhook channel not found")

// Service is the webhook channels, their deliveries and the network
// setting.
type Service struct {
	Pool    *pgxpool.Pool
	Box     *secrets.Box
	Catalog *locale.Catalog
	// BaseURL is the platform's public URL, for the links of a message.
	BaseURL string
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

func (s *Service) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

func errWrap(what string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s: %w", what, err)
}

// Network is the admins' webhook network setting.
type Network struct {
	// AllowedCIDRs are internal networks webhooks may reach all the same.
	AllowedCIDRs []string `json:"allowedCIDRs"`
}

const networkKey = "webhooks"

// Network is the network setting as stored; zero when never saved
// (LoadNetwork).
func (s *Service) Network(ctx context.Context) (Network, error) {
	return LoadNetwork(ctx, queries.New(s.Pool))
}

// LoadNetwork reads the network setting; zero when never saved.
func LoadNetwork(ctx context.Context, q *queries.Queries) (Network, error) {
	row, err := q.SettingGet(ctx, networkKey)
	if errors.Is(err, pgx.ErrNoRows) {
		return Network{}, nil
	}
	if err != nil {
		return Network{}, fmt.Errorf("load webhook settings: %w", err)
	}
	var n Network
	if err := json.Unmarshal(row.Value, &n); err != nil {
		return Network{}, fmt.Errorf("decode webhook settings: %w", err)
	}
	return n, nil
}

// Guard is the guard the setting makes.
func (n Network) Guard() Guard {
	var g Guard
	for _, c := range n.AllowedCIDRs {
		if p, err := netip.ParsePrefix(c); err == nil {
			g.Allowed = append(g.Allowed, p.Masked())
		}
	}
	return g
}

// ParseCIDRs reads a list of networks, one per line or separated by
// commas or spaces; a bare address is its own network.
func ParseCIDRs(s string) ([]string, error) {
	out := []string{}
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\n' || r == '\r' || r == '\t' }) {
		p, err := netip.ParsePrefix(f)
		if err != nil {
			a, aerr := netip.ParseAddr(f)
			if aerr != nil {
				return nil, fmt.Errorf("%q is not a network such as 10.0.0.0/8", f)
			}
			p = netip.PrefixFrom(a, a.BitLen())
		}
		if p = p.Masked(); !slices.Contains(out, p.String()) {
			out = append(out, p.String())
		}
	}
	return out, nil
}

// SaveNetwork stores the allowed networks (the text of the form) on behalf
// of the admin actor. Errors: input.Errors, adminauth.ErrNotAdmin.
func (s *Service) SaveNetwork(ctx context.Context, allowed string, actor audit.Actor) (Network, error) {
	cidrs, err := ParseCIDRs(allowed)
	if err != nil || !input.Storable(allowed) || len(cidrs) > 100 {
		return Network{}, input.Errors{FieldAllowed: "ErrWebhookAllowedCIDRs"}
	}
	n := Network{AllowedCIDRs: cidrs}
	err = adminauth.SaveSettings(ctx, s.Pool, actor.UserID, networkKey, adminauth.Confirm{}, func(q *queries.Queries) error {
		before, err := LoadNetwork(ctx, q)
		if err != nil {
			return err
		}
		b, err := json.Marshal(n)
		if err != nil {
			return fmt.Errorf("encode webhook settings: %w", err)
		}
		if err := q.SettingUpsert(ctx, queries.SettingUpsertParams{Key: networkKey, Value: b}); err != nil {
			return fmt.Errorf("store webhook settings: %w", err)
		}
		return audit.Record(ctx, q, actor, audit.Event{
			Action: ActionNetworkUpdate, TargetType: "settings", TargetID: networkKey,
			Details: map[string]any{"before": before.AllowedCIDRs, "after": n.AllowedCIDRs},
		})
	})
	return n, err
}

// Input is a new channel, as a form gives it.
type Input struct {
	Name   string
	Kind   string
	URL    string
	Secret string
}

// validate names the bad fields and returns the URL's host.
func (in Input) validate(g Guard) (string, input.Errors) {
	errs := input.Errors{}
	if strings.TrimSpace(in.Name) == "" {
		errs[FieldName] = "ErrWebhookName"
	} else if len(in.Name) > 100 || !input.Storable(in.Name) {
		errs[FieldName] = "ErrWebhookNameLong"
	}
	if !slices.Contains(ChannelKinds, in.Kind) {
		errs[FieldKind] = "ErrWebhookKind"
	}
	host, msg := checkURL(in.URL, g)
	if msg != "" {
		errs[FieldURL] = msg
	}
	if len(in.Secret) > 200 || !input.Storable(in.Secret) {
		errs[FieldSecret] = "ErrWebhookSecret"
	}
	return host, errs
}

// checkURL checks a webhook URL when it is saved: http or https, a host,
// no credentials, and, when the host is an address, one webhooks may
// reach. A name is checked at each connection (Guard.Client).
func checkURL(raw string, g Guard) (host, msgID string) {
	u, err := url.Parse(raw)
	if err != nil || len(raw) > 2000 || !input.Storable(raw) || (u.Scheme != "https" && u.Scheme != "http") || u.Hostname() == "" || u.User != nil {
		return "", "ErrWebhookURL"
	}
	if a, err := netip.ParseAddr(u.Hostname()); err == nil {
		if g.Check(a) != nil {
			return "", "ErrWebhookURLInternal"
		}
	} else if h := strings.ToLower(u.Hostname()); h == "localhost" || strings.HasSuffix(h, ".localhost") {
		if len(g.Allowed) == 0 {
			return "", "ErrWebhookURLInternal"
		}
	}
	return u.Host, ""
}

// Channel is a channel as the pages show it: never its URL (chat services
// put their token there) nor its secret.
type Channel struct {
	ID         int64
	Name       string
	Kind       string
	Host       string
	Signed     bool
	CreatedAt  time.Time
	OwnerEmail string
}

func channelOf(c queries.WebhookChannel) Channel {
	return Channel{ID: c.ID, Name: c.Name, Kind: c.Kind, Host: c.UrlHost, Signed: c.SecretSealed != "", CreatedAt: c.CreatedAt.Time}
}

// Created is a new channel and, for a generic webhook, its secret, which
// is shown this once.
type Created struct {
	Channel Channel
	Secret  string
}

// Platform is who acts on the platform's channels: no organization. Each
// method takes who acts, an organization's member or Platform; the
// platform's changes and tests are for the admin actor alone.
var Platform = orgs.Acting{}

func platform(who orgs.Acting) bool { return who.OrgID == 0 }

// Create adds a channel to who's organization, for an owner or admin of
// it (orgs.ManageWebhooks), or, for the admin actor, to the platform's
// (Platform). lang is what its messages are worded in when the member who
// added it is gone. Errors: input.Errors, orgs.ErrForbidden, ErrNotFound
// (not a member), adminauth.ErrNotAdmin.
func (s *Service) Create(ctx context.Context, who orgs.Acting, lang string, in Input, actor audit.Actor) (Created, error) {
	in.Name = strings.TrimSpace(in.Name)
	in.URL = strings.TrimSpace(in.URL)
	in.Secret = strings.TrimSpace(in.Secret)
	var out Created
	err := pgx.BeginFunc(ctx, s.Pool, func(tx pgx.Tx) error {
		q := queries.New(tx)
		action := ActionCreate
		var org, maker pgtype.Int8
		if platform(who) {
			action = ActionPlatformCreate
			if err := adminauth.LockActiveAdmin(ctx, q, actor.UserID); err != nil {
				return err
			}
		} else {
			org, maker = pgtype.Int8{Int64: who.OrgID, Valid: true}, pgtype.Int8{Int64: who.UserID, Valid: true}
			if err := q.WebhookChannelLockOrg(ctx, who.OrgID); err != nil {
				return fmt.Errorf("lock organization %d: %w", who.OrgID, err)
			}
			ok, err := q.OrgMemberIn(ctx, queries.OrgMemberInParams{OrgID: who.OrgID, UserID: who.UserID, Roles: who.Roles(orgs.ManageWebhooks)})
			if err != nil {
				return fmt.Errorf("check membership: %w", err)
			}
			if !ok {
				return refusal(ctx, q, who)
			}
		}
		network, err := LoadNetwork(ctx, q)
		if err != nil {
			return err
		}
		host, errs := in.validate(network.Guard())
		if !platform(who) && len(errs) == 0 {
			n, err := q.WebhookChannelCountByOrg(ctx, who.OrgID)
			if err != nil {
				return fmt.Errorf("count webhook channels: %w", err)
			}
			if n >= MaxChannels {
				errs[FieldName] = "ErrWebhookTooMany"
			}
		}
		if len(errs) > 0 {
			return errs
		}
		secret := in.Secret
		switch {
		case in.Kind == Generic:
			secret = "whsec_" + rand.Text()
			out.Secret = secret
		case !Signed(in.Kind):
			secret = ""
		}
		sealedSecret := ""
		if secret != "" {
			sealedSecret = s.Box.Seal([]byte(secret))
		}
		row, err := q.WebhookChannelCreate(ctx, queries.WebhookChannelCreateParams{
			OrgID: org, UserID: maker, Kind: in.Kind, Name: in.Name, UrlSealed: s.Box.Seal([]byte(in.URL)), UrlHost: host,
			SecretSealed: sealedSecret, Lang: lang,
		})
		if err != nil {
			return fmt.Errorf("create webhook channel: %w", err)
		}
		out.Channel = channelOf(row)
		return audit.Record(ctx, q, actor, audit.Event{
			Action: action, TargetType: "webhook_channel", TargetID: fmt.Sprint(row.ID),
			Details: map[string]any{"name": row.Name, "kind": row.Kind, "host": host, "signed": sealedSecret != ""},
		})
	})
	return out, err
}

// refusal is why who may not change their organization's channels:
// orgs.ErrForbidden for a member who may read them, else ErrNotFound.
func refusal(ctx context.Context, q *queries.Queries, who orgs.Acting) error {
	ok, err := q.OrgMemberIn(ctx, queries.OrgMemberInParams{OrgID: who.OrgID, UserID: who.UserID, Roles: who.Roles(orgs.Read)})
	switch {
	case err != nil:
		return fmt.Errorf("check membership: %w", err)
	case ok:
		return orgs.ErrForbidden
	}
	return ErrNotFound
}

// channel loads channel id of who's organization for a member whose role
// allows p, or a platform channel for Platform. Errors: ErrNotFound (none,
// or another organization's), orgs.ErrForbidden (a member whose role
// does not allow p).
func channel(ctx context.Context, q *queries.Queries, who orgs.Acting, p orgs.Permission, id int64) (queries.WebhookChannel, error) {
	var c queries.WebhookChannel
	var err error
	if platform(who) {
		c, err = q.WebhookChannelGetPlatform(ctx, id)
	} else {
		c, err = q.WebhookChannelGetForMember(ctx, queries.WebhookChannelGetForMemberParams{ID: id, OrgID: who.OrgID, UserID: who.UserID, Roles: who.Roles(p)})
	}
	switch {
	case errors.Is(err, pgx.ErrNoRows) && !platform(who) && p != orgs.Read:
		// Not for p: forbidden to a member who sees it, not found to others.
		if _, err := channel(ctx, q, who, orgs.Read, id); err != nil {
			return c, err
		}
		return c, orgs.ErrForbidden
	case errors.Is(err, pgx.ErrNoRows):
		return c, ErrNotFound
	case err != nil:
		return c, fmt.Errorf("load webhook channel %d: %w", id, err)
	}
	return c, nil
}

// Delete removes a channel of who's organization, for an owner or admin
// of it, or, for the admin actor, a platform channel (Platform), with its
// log. Errors: ErrNotFound, orgs.ErrForbidden, adminauth.ErrNotAdmin.
func (s *Service) Delete(ctx context.Context, who orgs.Acting, id int64, actor audit.Actor) error {
	return pgx.BeginFunc(ctx, s.Pool, func(tx pgx.Tx) error {
		q := queries.New(tx)
		action := ActionDelete
		if platform(who) {
			action = ActionPlatformDelete
			if err := adminauth.LockActiveAdmin(ctx, q, actor.UserID); err != nil {
				return err
			}
		}
		c, err := channel(ctx, q, who, orgs.ManageWebhooks, id)
		if err != nil {
			return err
		}
		if _, err := q.WebhookChannelDelete(ctx, c.ID); err != nil {
			return fmt.Errorf("delete webhook channel %d: %w", id, err)
		}
		return audit.Record(ctx, q, actor, audit.Event{
			Action: action, TargetType: "webhook_channel", TargetID: fmt.Sprint(c.ID),
			Details: map[string]any{"name": c.Name, "kind": c.Kind, "host": c.UrlHost},
		})
	})
}

// List is the channels of who's organization, for any member of it, or
// the platform's (Platform).
func (s *Service) List(ctx context.Context, who orgs.Acting) ([]Channel, error) {
	q := queries.New(s.Pool)
	if platform(who) {
		return channelsOf(q.WebhookChannelListPlatform(ctx))
	}
	return channelsOf(q.WebhookChannelListForMember(ctx, queries.WebhookChannelListForMemberParams{
		OrgID: who.OrgID, UserID: who.UserID, Roles: who.Roles(orgs.Read),
	}))
}

// channelsOf shows the channels rows, which were read with err.
func channelsOf(rows []queries.WebhookChannel, err error) ([]Channel, error) {
	if err != nil {
		return nil, fmt.Errorf("list webhook channels: %w", err)
	}
	out := make([]Channel, 0, len(rows))
	for _, r := range rows {
		out = append(out, channelOf(r))
	}
	return out, nil
}

// Page is up to limit of the channels of who's organization, for any
// member of it, or of the platform's (Platform), newest first, from the
// one below beforeID (0: the newest).
func (s *Service) Page(ctx context.Context, who orgs.Acting, beforeID int64, limit int32) ([]Channel, error) {
	q := queries.New(s.Pool)
	if platform(who) {
		return channelsOf(q.WebhookChannelPagePlatform(ctx, queries.WebhookChannelPagePlatformParams{BeforeID: beforeID, RowLimit: limit}))
	}
	return channelsOf(q.WebhookChannelPageForMember(ctx, queries.WebhookChannelPageForMemberParams{
		OrgID: who.OrgID, UserID: who.UserID, Roles: who.Roles(orgs.Read), BeforeID: beforeID, RowLimit: limit,
	}))
}

// Get is channel id of who's organization, for any member of it, or a
// platform channel (Platform). Errors: ErrNotFound.
func (s *Service) Get(ctx context.Context, who orgs.Acting, id int64) (Channel, error) {
	c, err := channel(ctx, queries.New(s.Pool), who, orgs.Read, id)
	if err != nil {
		return Channel{}, err
	}
	return channelOf(c), nil
}

// Attempt is one line of a delivery log.
type Attempt struct {
	ChannelID   int64
	ChannelName string
	ChannelKind string
	// Owner is whose channel it is: the user's address for a personal
	// organization's, a team's name, empty for the platform's.
	Owner        string
	EventID      string
	EventKind    string
	Attempt      int32
	Status       string
	ResponseCode int32
	Error        string
	At           time.Time
}

// LogLength is how many attempts a channel's log shows.
const LogLength = 20

// Log is the latest attempts of channel id of who's organization, for any
// member of it, or of a platform channel (Platform). Errors: ErrNotFound.
func (s *Service) Log(ctx context.Context, who orgs.Acting, id int64) ([]Attempt, error) {
	q := queries.New(s.Pool)
	if _, err := channel(ctx, q, who, orgs.Read, id); err != nil {
		return nil, err
	}
	rows, err := q.WebhookAttemptListByChannel(ctx, queries.WebhookAttemptListByChannelParams{ChannelID: id, RowLimit: LogLength})
	if err != nil {
		return nil, fmt.Errorf("webhook log of channel %d: %w", id, err)
	}
	out := make([]Attempt, 0, len(rows))
	for _, r := range rows {
		out = append(out, Attempt{
			ChannelID: r.ChannelID, EventID: r.EventID, EventKind: r.EventKind, Attempt: r.Attempt, Status: r.Status,
			ResponseCode: r.ResponseCode, Error: r.Error, At: r.CreatedAt.Time,
		})
	}
	return out, nil
}

// RecentLog is every channel's latest attempts, for the admins.
func (s *Service) RecentLog(ctx context.Context, limit int32) ([]Attempt, error) {
	rows, err := queries.New(s.Pool).WebhookAttemptListRecent(ctx, limit)
	if err != nil {
		return nil, fmt.Errorf("webhook log: %w", err)
	}
	out := make([]Attempt, 0, len(rows))
	for _, r := range rows {
		out = append(out, Attempt{
			ChannelID: r.ChannelID, ChannelName: r.ChannelName, ChannelKind: r.ChannelKind, Owner: r.Owner,
			EventID: r.EventID, EventKind: r.EventKind, Attempt: r.Attempt, Status: r.Status,
			ResponseCode: r.ResponseCode, Error: r.Error, At: r.CreatedAt.Time,
		})
	}
	return out, nil
}

// target opens a channel's URL and secret.
func (s *Service) target(c queries.WebhookChannel) (Target, error) {
	u, err := s.Box.Open(c.UrlSealed)
	if err != nil {
		return Target{}, fmt.Errorf("open the URL of webhook channel %d (sealed with another KUBEBYON_SECRET_KEY?): %w", c.ID, err)
	}
	t := Target{Kind: c.Kind, URL: string(u)}
	if c.SecretSealed != "" {
		sec, err := s.Box.Open(c.SecretSealed)
		if err != nil {
			return Target{}, fmt.Errorf("open the secret of webhook channel %d: %w", c.ID, err)
		}
		t.Secret = string(sec)
	}
	return t, nil
}

// event words the event of args for a channel.
func (s *Service) event(id, kind, template, lang string, at time.Time, data map[string]any) Event {
	l := s.Catalog.For(lang)
	data["BaseURL"] = s.BaseURL
	e := Event{ID: id, Kind: kind, Time: at.UTC(), Links: []Link{}}
	if template == "" {
		e.Title, e.Body = l.T("WebhookTestTitle", data), l.T("WebhookTestBody", data)
	} else {
		notify.Plain(l, data)
		e.Title, e.Body = notify.Title(l, template, data), l.T("Notify"+template+"Body", data)
	}
	base := strings.TrimRight(s.BaseURL, "/")
	if id, ok := clusterID(data["ClusterID"]); ok {
		name, _ := data["Cluster"].(string)
		e.Cluster = &Cluster{ID: id, Name: name}
		e.Links = append(e.Links, Link{Title: l.T("WebhookLinkCluster"), URL: fmt.Sprintf("%s/clusters/%d", base, id)})
	}
	if base != "" {
		e.Links = append(e.Links, Link{Title: l.T("WebhookLinkNotifications"), URL: base + "/notifications"})
	}
	return e
}

// clusterID reads the ClusterID of a message's data, as decoded.
func clusterID(v any) (int64, bool) {
	switch x := v.(type) {
	case json.Number:
		n, err := x.Int64()
		return n, err == nil
	case int64:
		return x, true
	case int:
		return int64(x), true
	}
	return 0, false
}

// record writes one attempt to the channel's log.
func (s *Service) record(ctx context.Context, channelID int64, e Event, attempt int, status string, o Outcome) error {
	msg := ""
	if o.Err != nil {
		msg = input.Truncate(input.Printable(o.Err.Error()), 1000)
	}
	err := queries.New(s.Pool).WebhookAttemptCreate(ctx, queries.WebhookAttemptCreateParams{
		ChannelID: channelID, EventID: e.ID, EventKind: e.Kind, Attempt: int32(attempt), Status: status,
		ResponseCode: int32(o.Code), Error: msg,
	})
	return errWrap("log webhook attempt", err)
}

// Deliver makes one attempt at a delivery and logs it. It returns nil when
// delivered or when the channel is gone, the attempt's error when another
// may succeed (River retries it), and a cancelling error when none can.
func (s *Service) Deliver(ctx context.Context, args notify.WebhookArgs, attempt, maxAttempts int) error {
	q := queries.New(s.Pool)
	c, err := q.WebhookChannelGet(ctx, args.ChannelID)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("load webhook channel %d: %w", args.ChannelID, err)
	}
	raw, err := s.Box.Open(args.Sealed)
	if err != nil {
		return river.JobCancel(fmt.Errorf("open webhook data: %w", err))
	}
	data := map[string]any{}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&data); err != nil {
		return river.JobCancel(fmt.Errorf("decode webhook data: %w", err))
	}
	e := s.event(args.EventID, args.EventKind, args.Template, args.Lang, args.Time, data)
	o, err := s.attempt(ctx, c, e)
	if err != nil {
		return err
	}
	status := StatusDelivered
	switch {
	case o.Err != nil && o.Retry && attempt < maxAttempts:
		status = StatusRetrying
	case o.Err != nil:
		status = StatusFailed
	}
	if err := s.record(ctx, c.ID, e, attempt, status, o); err != nil {
		return err
	}
	switch {
	case o.Err == nil:
		return nil
	case o.Retry:
		return fmt.Errorf("webhook channel %d: %w", c.ID, o.Err)
	}
	return river.JobCancel(fmt.Errorf("webhook channel %d: %w", c.ID, o.Err))
}

// attempt sends e to c once, through the guard the network setting makes.
func (s *Service) attempt(ctx context.Context, c queries.WebhookChannel, e Event) (Outcome, error) {
	network, err := LoadNetwork(ctx, queries.New(s.Pool))
	if err != nil {
		return Outcome{}, err
	}
	t, err := s.target(c)
	if err != nil {
		return Outcome{Err: err}, nil
	}
	ctx, cancel := context.WithTimeout(ctx, AttemptTimeout)
	defer cancel()
	return Send(ctx, network.Guard().Client(), t, e, s.now()), nil
}

// Test sends a test message to a channel of who's organization, for an
// owner or admin of it, or, for the admin actor, to a platform channel
// (Platform), at once, logs it in the channel's log and the audit log, and
// returns what came of it (its Err is why it failed). lang words the
// message. Errors: ErrNotFound, orgs.ErrForbidden, adminauth.ErrNotAdmin.
func (s *Service) Test(ctx context.Context, who orgs.Acting, id int64, lang string, actor audit.Actor) (Outcome, error) {
	q := queries.New(s.Pool)
	if platform(who) {
		// Checked before sending too: the audit's check comes after.
		err := pgx.BeginFunc(ctx, s.Pool, func(tx pgx.Tx) error {
			return adminauth.LockActiveAdmin(ctx, queries.New(tx), actor.UserID)
		})
		if err != nil {
			return Outcome{}, err
		}
	}
	c, err := channel(ctx, q, who, orgs.ManageWebhooks, id)
	if err != nil {
		return Outcome{}, err
	}
	e := s.event(notify.NewEventID(), TestKind, "", lang, s.now(), map[string]any{"Channel": c.Name})
	o, err := s.attempt(ctx, c, e)
	if err != nil {
		return Outcome{}, err
	}
	status := StatusDelivered
	if o.Err != nil {
		status = StatusFailed
	}
	if err := s.record(ctx, c.ID, e, 1, status, o); err != nil {
		return o, err
	}
	action := ActionTest
	err = pgx.BeginFunc(ctx, s.Pool, func(tx pgx.Tx) error {
		q := queries.New(tx)
		if platform(who) {
			action = ActionPlatformTest
			if err := adminauth.LockActiveAdmin(ctx, q, actor.UserID); err != nil {
				return err
			}
		}
		return audit.Record(ctx, q, actor, audit.Event{
			Action: action, TargetType: "webhook_channel", TargetID: fmt.Sprint(c.ID),
			Details: map[string]any{"delivered": o.Err == nil, "code": o.Code},
		})
	})
	return o, err
}

// NetworkTag is the entity tag of the stored webhook network (adminauth.SettingsTag).
func (s *Service) NetworkTag(ctx context.Context) (string, error) {
	return adminauth.SettingsTag(ctx, queries.New(s.Pool), networkKey)
}
