package handlers_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubebyon/kubebyon/handlers/handlerstest"
)

// rowIDs are the ids a list's rows carry in attr (data-cluster-id,
// data-user-id), in the order shown.
func rowIDs(t *testing.T, body, testID, attr string) []int64 {
	t.Helper()
	var ids []int64
	for _, m := range regexp.MustCompile(`data-testid="`+testID+`" `+attr+`="(\d+)"`).FindAllStringSubmatch(body, -1) {
		var id int64
		_, err := fmt.Sscan(m[1], &id)
		require.NoError(t, err)
		ids = append(ids, id)
	}
	return ids
}

// reversed is ids the other way round.
func reversed(ids []int64) []int64 {
	r := slices.Clone(ids)
	slices.Reverse(r)
	return r
}

// requireSorted asks c for the list at path sorted by key both ways and
// checks the rows against asc (and its reverse), the header's aria-sort,
// and its link, which turns the order round.
func requireSorted(t *testing.T, c *handlerstest.Client, path, query, key, rowTestID, attr string, asc []int64) {
	t.Helper()
	for _, dir := range []string{"asc", "desc"} {
		code, body := c.Get(path + "?" + query + "sort=" + key + "&dir=" + dir)
		require.Equal(t, http.StatusOK, code, body)
		want, aria, next := asc, "ascending", "desc"
		if dir == "desc" {
			want, aria, next = reversed(asc), "descending", "asc"
		}
		require.Equal(t, want, rowIDs(t, body, rowTestID, attr), "sorted by %s %s", key, dir)
		require.Regexp(t, `<th scope="col" class="sortable" aria-sort="`+aria+`"><a href="[^"]*" class="sort-link" data-testid="sort-`+key+`"`, body)
		require.Equal(t, 1, strings.Count(body, "aria-sort="), "one sorted column")
		want2, err := url.ParseQuery(query + "dir=" + next + "&sort=" + key)
		require.NoError(t, err)
		link, err := url.Parse(handlerstest.LinkOf(t, body, "sort-"+key))
		require.NoError(t, err)
		require.Equal(t, path, link.Path)
		require.Equal(t, want2, link.Query(), "the header's link keeps the filters and turns the order round")
	}
}

// TestClusterListSorted: the cluster list sorts by each of its sortable
// columns both ways (names in any case), pages a sorted list by ?page=
// keeping the order, falls back to the newest first for a key it does
// not sort by, and never shows another organization's cluster.
func TestClusterListSorted(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	ctx := context.Background()
	alice, aliceEmail := b.SignedUpUser(t, "sort-alice")
	_, bobEmail := b.SignedUpUser(t, "sort-bob")
	a, bob := b.UserID(t, aliceEmail), b.UserID(t, bobEmail)

	web := b.InsertCluster(t, a, "Web", "web-s1", "v1.33.4", "nodeport", "ready")
	api := b.InsertCluster(t, a, "api", "api-s2", "v1.34.0", "nodeport", "failed")
	db := b.InsertCluster(t, a, "db", "db-s3", "v1.32.1", "loadbalancer", "pending")
	bobs := b.InsertCluster(t, bob, "aaa", "aaa-s4", "v1.30.0", "nodeport", "failed")
	for id, age := range map[int64]string{web: "1 hour", api: "3 hours", db: "2 hours", bobs: "4 hours"} {
		_, err := b.Pool.Exec(ctx, `UPDATE clusters SET created_at = now() - $2::interval WHERE id = $1`, id, age)
		require.NoError(t, err)
	}

	for key, asc := range map[string][]int64{
		"name":    {api, db, web},
		"status":  {api, db, web}, // failed, pending, ready
		"version": {db, web, api},
		"created": {api, db, web},
	} {
		requireSorted(t, alice, "/clusters", "", key, "cluster-row", "data-cluster-id", asc)
	}

	code, body := alice.Get("/clusters?sort=owner_id&dir=asc")
	require.Equal(t, http.StatusOK, code, body)
	require.Equal(t, []int64{db, api, web}, rowIDs(t, body, "cluster-row", "data-cluster-id"), "an unknown key: newest first")
	require.NotContains(t, body, "aria-sort=")
	require.Equal(t, "/clusters?dir=asc&sort=name", handlerstest.LinkOf(t, body, "sort-name"))

	// A sorted list of more than a page: ?page= goes on in its order.
	var more []int64
	for i := range 19 {
		more = append(more, b.InsertCluster(t, a, fmt.Sprintf("m%02d", i), fmt.Sprintf("m%02d-s", i), "v1.34.0", "nodeport", "ready"))
	}
	all := append(append([]int64{api, db}, more...), web)
	code, body = alice.Get("/clusters?sort=name&dir=asc")
	require.Equal(t, http.StatusOK, code, body)
	require.Equal(t, all[:20], rowIDs(t, body, "cluster-row", "data-cluster-id"))
	next := handlerstest.LinkOf(t, body, "clusters-next")
	require.Equal(t, "/clusters?dir=asc&page=2&sort=name", next)
	code, body = alice.Get(next)
	require.Equal(t, http.StatusOK, code, body)
	require.Equal(t, all[20:], rowIDs(t, body, "cluster-row", "data-cluster-id"))
	require.NotContains(t, body, `data-testid="clusters-next"`)
	require.Equal(t, "/clusters?dir=asc&sort=name", handlerstest.LinkOf(t, body, "clusters-first"))
	require.NotContains(t, body, fmt.Sprintf(`data-cluster-id="%d"`, bobs))
	// A page far past the end is empty, not a server error.
	for _, page := range []string{"999999999", "9223372036854775807"} {
		code, body = alice.Get("/clusters?sort=name&dir=asc&page=" + page)
		require.Equal(t, http.StatusOK, code, page)
		require.Empty(t, rowIDs(t, body, "cluster-row", "data-cluster-id"), page)
	}
}

// TestAdminClusterListSorted: the admins' cluster list sorts every user's
// clusters by each sortable column both ways, within its filters, which
// the headers' links and the filter form keep.
func TestAdminClusterListSorted(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	ctx := context.Background()
	admin, _ := b.SignedUpAdmin(t, "sort-admin")
	_, aliceEmail := b.SignedUpUser(t, "sort-b-alice")
	_, bobEmail := b.SignedUpUser(t, "sort-a-bob")
	a, bob := b.UserID(t, aliceEmail), b.UserID(t, bobEmail)

	web := b.InsertCluster(t, a, "Web", "web-s1", "v1.33.4", "nodeport", "ready")
	api := b.InsertCluster(t, bob, "api", "api-s2", "v1.34.0", "nodeport", "failed")
	db := b.InsertCluster(t, a, "db", "db-s3", "v1.32.1", "loadbalancer", "ready")
	for id, age := range map[int64]string{web: "1 hour", api: "3 hours", db: "2 hours"} {
		_, err := b.Pool.Exec(ctx, `UPDATE clusters SET created_at = now() - $2::interval WHERE id = $1`, id, age)
		require.NoError(t, err)
	}
	_, err := b.Pool.Exec(ctx, `INSERT INTO nodes (cluster_id, name, ready, conditions, addresses)
		VALUES ($1, 'n1', true, '[]', '[]'), ($1, 'n2', true, '[]', '[]'), ($2, 'n1', true, '[]', '[]')`, db, web)
	require.NoError(t, err)

	for key, asc := range map[string][]int64{
		"name":    {api, db, web},
		"owner":   {api, db, web}, // bob's, then alice's by id desc
		"status":  {api, db, web}, // failed, then ready by id desc
		"version": {db, web, api},
		"nodes":   {api, web, db},
		"created": {api, db, web},
	} {
		if key == "owner" || key == "status" {
			// Equals come newest first whichever way: check ascending only.
			code, body := admin.Get("/admin/clusters?sort=" + key + "&dir=asc")
			require.Equal(t, http.StatusOK, code, body)
			require.Equal(t, asc, rowIDs(t, body, "admin-cluster-row", "data-cluster-id"), key)
			continue
		}
		requireSorted(t, admin, "/admin/clusters", "", key, "admin-cluster-row", "data-cluster-id", asc)
	}
	requireSorted(t, admin, "/admin/clusters", "status=ready&", "name", "admin-cluster-row", "data-cluster-id", []int64{db, web})

	code, body := admin.Get("/admin/clusters?status=ready&sort=name&dir=desc")
	require.Equal(t, http.StatusOK, code, body)
	form := handlerstest.SectionHTML(t, body, "admin-cluster-filters")
	require.Contains(t, form, `<input type="hidden" name="sort" value="name">`, "the filter form keeps the order")
	require.Contains(t, form, `<input type="hidden" name="dir" value="desc">`)

	code, body = admin.Get("/admin/clusters?sort=slug&dir=asc")
	require.Equal(t, http.StatusOK, code, body)
	require.Equal(t, []int64{db, api, web}, rowIDs(t, body, "admin-cluster-row", "data-cluster-id"), "an unknown key: newest first")
	require.NotContains(t, body, "aria-sort=")
}

// TestAdminUserListSorted: the admins' user list sorts by each sortable
// column both ways (those never signed in last), within a search, which
// the headers' links keep.
func TestAdminUserListSorted(t *testing.T) {
	t.Parallel()
	b := handlerstest.Setup(t)
	ctx := context.Background()
	admin, adminEmail := b.SignedUpAdmin(t, "zz-sort-admin")
	insert := func(email, name, role, age, signedIn string) int64 {
		var id int64
		require.NoError(t, b.Pool.QueryRow(ctx, `INSERT INTO users (email, name, role, email_verified_at, created_at, last_sign_in_at)
			VALUES ($1, $2, $3, now(), now() - $4::interval, now() - NULLIF($5, '')::interval) RETURNING id`, email, name, role, age, signedIn).Scan(&id))
		return id
	}
	carol := insert("carol@sort.test", "carol", "user", "1 day", "1 hour")
	al := insert("Al@sort.test", "Zed", "admin", "3 days", "2 hours")
	bo := insert("bo@sort.test", "bo", "user", "2 days", "")
	me := b.UserID(t, adminEmail)
	_, err := b.Pool.Exec(ctx, `UPDATE users SET name = 'alice', last_sign_in_at = now() WHERE id = $1`, me)
	require.NoError(t, err)

	for key, asc := range map[string][]int64{
		"email":   {al, bo, carol, me},
		"name":    {me, bo, carol, al},
		"created": {al, bo, carol, me},
	} {
		requireSorted(t, admin, "/admin/users", "", key, "admin-user-row", "data-user-id", asc)
	}
	for key, want := range map[string][]int64{
		"role=asc":          {me, al, carol, bo}, // admin, then user; by id among equals
		"last_sign_in=asc":  {al, carol, me, bo}, // never signed in last
		"last_sign_in=desc": {me, carol, al, bo}, // ...either way
	} {
		k, dir, _ := strings.Cut(key, "=")
		code, body := admin.Get("/admin/users?sort=" + k + "&dir=" + dir)
		require.Equal(t, http.StatusOK, code, body)
		require.Equal(t, want, rowIDs(t, body, "admin-user-row", "data-user-id"), key)
	}
	requireSorted(t, admin, "/admin/users", "q=sort.test&", "email", "admin-user-row", "data-user-id", []int64{al, bo, carol})

	code, body := admin.Get("/admin/users?sort=password_hash&dir=desc")
	require.Equal(t, http.StatusOK, code, body)
	require.Equal(t, []int64{me, carol, al, bo}, rowIDs(t, body, "admin-user-row", "data-user-id"), "an unknown key: by id")
	require.NotContains(t, body, "aria-sort=")
}
