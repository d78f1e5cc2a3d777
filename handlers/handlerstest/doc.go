// Package handlerstest serves the real handlers for tests and drives them:
// Setup starts the platform on a database of the test's own (mail going
// to mailpit; River only inserts, and the test works the jobs it needs,
// or asks for workers with SetupWorking) and returns a Bundle; Bundle.Client
// is a cookie-keeping client playing a browser without JavaScript; the
// other helpers sign up accounts, make clusters and nodes, connect the
// host cluster, read mail and play the workers. Deps maps the services to
// the handlers' dependencies for Setup and the bench.
//
// Only tests (handlers, handlers/browsertest) and the bench import it.
package handlerstest
