package handlers

import (
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/internal/notify"
)

// FuzzParsePreferences sends the parser arbitrary forms: the result always
// holds exactly every kind and channel, each on only when its checkbox came
// as "on", and a form built from a choice reads back as that choice.
func FuzzParsePreferences(f *testing.F) {
	f.Add("", uint16(0))
	f.Add("pref.security_sign_in.email=on", uint16(0xffff))
	f.Add("pref.billing.in_app=off&pref.billing.email=on&pref.nope.email=on", uint16(5))
	f.Add("pref.cluster_ready.email=on&pref.cluster_ready.email=&x=%zz", uint16(1<<11))
	f.Add("pref..=on&pref.security_sign_in.sms=on;pref.billing.email=on", uint16(42))
	f.Fuzz(func(t *testing.T, raw string, choice uint16) {
		form, _ := url.ParseQuery(raw) // a bad query still yields what parsed
		p := parsePreferences(form, notify.Kinds)
		require.Len(t, p, len(notify.Kinds))
		for _, k := range notify.Kinds {
			require.Len(t, p[k], len(notify.Channels))
			for _, c := range notify.Channels {
				require.Equal(t, form.Get(preferenceField(k, c)) == "on", p[k][c])
			}
		}

		want := map[notify.Kind]map[notify.Channel]bool{}
		built := url.Values{}
		bit := 0
		for _, k := range notify.Kinds {
			want[k] = map[notify.Channel]bool{}
			for _, c := range notify.Channels {
				on := choice&(1<<(bit%16)) != 0
				bit++
				want[k][c] = on
				if on {
					built.Set(preferenceField(k, c), "on")
				}
			}
		}
		require.Equal(t, want, map[notify.Kind]map[notify.Channel]bool(parsePreferences(built, notify.Kinds)))
	})
}
