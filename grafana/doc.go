// Package grafana owns the lab's Grafana side: the dashboards
// (dashboards/*.json: latency, ABR, link), Grafana's provisioning of them
// and of their Prometheus data source, the Prometheus scrape configuration
// and the compose file that starts both (see README.md). Its one piece of
// Go writes them anywhere (WriteSetUp, lab grafana), so that a team with a
// lab binary alone has them; its tests check the files against each other
// and, with Debian's prometheus installed, that every dashboard query
// returns data from a real-time session that Prometheus scraped.
package grafana
