package grafana

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

// The dashboards are read with only the fields the checks need: Grafana's
// model has hundreds, and the point is what the queries ask, not a second
// copy of Grafana's schema.
type dashboard struct {
	file          string
	UID           string `json:"uid"`
	Title         string `json:"title"`
	SchemaVersion int    `json:"schemaVersion"`
	Templating    struct {
		List []variable `json:"list"`
	} `json:"templating"`
	Panels []panel `json:"panels"`
}

type datasourceRef struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

type variable struct {
	Name       string          `json:"name"`
	Type       string          `json:"type"`
	Datasource *datasourceRef  `json:"datasource"`
	Query      json.RawMessage `json:"query"`
	IncludeAll bool            `json:"includeAll"`
	AllValue   string          `json:"allValue"`
}

type panel struct {
	ID         int            `json:"id"`
	Type       string         `json:"type"`
	Title      string         `json:"title"`
	Datasource *datasourceRef `json:"datasource"`
	GridPos    struct {
		H, W, X, Y int
	} `json:"gridPos"`
	Targets []target `json:"targets"`
	// Panels are a collapsed row's: Grafana nests them there.
	Panels []panel `json:"panels"`
}

type target struct {
	RefID      string         `json:"refId"`
	Expr       string         `json:"expr"`
	Datasource *datasourceRef `json:"datasource"`
}

// query is one panel target's expression, named for failure messages.
type query struct {
	name string // dashboard file / panel title / refId
	expr string
}

// loadDashboards reads every dashboard in dashboards/.
func loadDashboards(t *testing.T) []dashboard {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("dashboards", "*.json"))
	require.NoError(t, err)
	require.NotEmpty(t, files, "no dashboards in grafana/dashboards")
	var out []dashboard
	for _, f := range files {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		var d dashboard
		require.NoError(t, json.Unmarshal(data, &d), f)
		d.file = filepath.Base(f)
		out = append(out, d)
	}
	return out
}

// panels lists a dashboard's panels, rows' nested panels included.
func (d dashboard) panels() []panel {
	var out []panel
	var walk func([]panel)
	walk = func(ps []panel) {
		for _, p := range ps {
			out = append(out, p)
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	return out
}

// queries lists every target's expression.
func (d dashboard) queries() []query {
	var out []query
	for _, p := range d.panels() {
		for _, tg := range p.Targets {
			out = append(out, query{name: d.file + "/" + p.Title + "/" + tg.RefID, expr: tg.Expr})
		}
	}
	return out
}

// Grafana's own variables that the dashboards may use, with the values the
// live test gives them (see TestDashboardQueriesReturnData).
var builtins = []string{"__rate_interval", "__interval", "__range"}

// varRef finds $name and ${name} (with an optional :format) references.
var varRef = regexp.MustCompile(`\$(?:\{(\w+)(?::\w+)?\}|(\w+))`)

// expand replaces the variables of expr by their values; an unknown one
// is an error, so that a typo cannot pass as a literal "$scenarioo".
func expand(expr string, values map[string]string) (string, error) {
	var missing []string
	out := varRef.ReplaceAllStringFunc(expr, func(m string) string {
		sub := varRef.FindStringSubmatch(m)
		name := sub[1] + sub[2]
		v, ok := values[name]
		if !ok {
			missing = append(missing, name)
			return m
		}
		return v
	})
	if len(missing) > 0 {
		return "", fmt.Errorf("unknown variables %v in %q", missing, expr)
	}
	return out, nil
}

// labelValues matches the one variable query form the dashboards use.
var labelValues = regexp.MustCompile(`^label_values\(\s*(\w+)\s*,\s*(\w+)\s*\)$`)

// variableQuery is a query variable's label_values(metric, label) query.
func variableQuery(v variable) (metric, label string, err error) {
	var q string
	if err := json.Unmarshal(v.Query, &q); err != nil {
		return "", "", fmt.Errorf("variable %s: query is not a string: %w", v.Name, err)
	}
	m := labelValues.FindStringSubmatch(q)
	if m == nil {
		return "", "", fmt.Errorf("variable %s: query %q is not label_values(metric, label)", v.Name, q)
	}
	return m[1], m[2], nil
}

// readYAML decodes a file of the folder into v.
func readYAML(t *testing.T, file string, v any) {
	t.Helper()
	data, err := os.ReadFile(file)
	require.NoError(t, err)
	require.NoError(t, yaml.Unmarshal(data, v), file)
}

// provisionedDatasource is the uid and scrape spacing of the data source
// Grafana is provisioned with.
func provisionedDatasource(t *testing.T) (uid, timeInterval, url string) {
	t.Helper()
	var f struct {
		Datasources []struct {
			Type     string `yaml:"type"`
			UID      string `yaml:"uid"`
			URL      string `yaml:"url"`
			JSONData struct {
				TimeInterval string `yaml:"timeInterval"`
			} `yaml:"jsonData"`
		} `yaml:"datasources"`
	}
	readYAML(t, filepath.Join("provisioning", "datasources", "prometheus.yaml"), &f)
	require.Len(t, f.Datasources, 1)
	ds := f.Datasources[0]
	require.Equal(t, "prometheus", ds.Type)
	require.NotEmpty(t, ds.UID)
	return ds.UID, ds.JSONData.TimeInterval, ds.URL
}

// The dashboards are complete and consistent with their provisioning: each
// panel has a title, uses the provisioned data source and has queries,
// and every variable a query names exists.
func TestDashboards(t *testing.T) {
	uid, _, _ := provisionedDatasource(t)
	ds := loadDashboards(t)
	var names []string
	uids := map[string]string{}
	for _, d := range ds {
		names = append(names, d.file)
		t.Run(d.file, func(t *testing.T) {
			require.NotEmpty(t, d.UID, "uid: Grafana would make one up, and links to the dashboard would break")
			require.NotEmpty(t, d.Title)
			require.Empty(t, uids[d.UID], "uid %s also used by %s", d.UID, uids[d.UID])
			uids[d.UID] = d.file
			// 39 is Grafana 10.4/11's; an older one would be migrated on
			// every load, a newer one refused by Grafana 10.
			require.Equal(t, 39, d.SchemaVersion)

			values := map[string]string{}
			for _, b := range builtins {
				values[b] = "1s"
			}
			for _, v := range d.Templating.List {
				require.Equal(t, "query", v.Type, "variable %s", v.Name)
				require.NotNil(t, v.Datasource, "variable %s: data source", v.Name)
				require.Equal(t, uid, v.Datasource.UID, "variable %s: data source", v.Name)
				_, _, err := variableQuery(v)
				require.NoError(t, err)
				// "All" must match series with any value of the label and
				// also those without it, which Grafana's default (a list
				// of the values seen) would not.
				require.True(t, v.IncludeAll, "variable %s: include All", v.Name)
				require.Equal(t, ".*", v.AllValue, "variable %s: All value", v.Name)
				values[v.Name] = v.AllValue
			}

			ids := map[int]bool{}
			n := 0
			for _, p := range d.panels() {
				if p.Type == "row" {
					continue
				}
				require.NotEmpty(t, p.Title, "panel %d has no title", p.ID)
				require.False(t, ids[p.ID], "panel id %d repeated", p.ID)
				ids[p.ID] = true
				require.NotNil(t, p.Datasource, "panel %q: data source", p.Title)
				require.Equal(t, datasourceRef{Type: "prometheus", UID: uid}, *p.Datasource, "panel %q: data source", p.Title)
				require.Positive(t, p.GridPos.W, "panel %q: width", p.Title)
				require.Positive(t, p.GridPos.H, "panel %q: height", p.Title)
				require.LessOrEqual(t, p.GridPos.X+p.GridPos.W, 24, "panel %q: Grafana's grid is 24 wide", p.Title)
				require.NotEmpty(t, p.Targets, "panel %q has no query", p.Title)
				refs := map[string]bool{}
				for _, tg := range p.Targets {
					require.NotEmpty(t, tg.RefID, "panel %q: target without refId", p.Title)
					require.False(t, refs[tg.RefID], "panel %q: refId %s repeated", p.Title, tg.RefID)
					refs[tg.RefID] = true
					if tg.Datasource != nil {
						require.Equal(t, uid, tg.Datasource.UID, "panel %q %s: data source", p.Title, tg.RefID)
					}
					require.NotEmpty(t, strings.TrimSpace(tg.Expr), "panel %q %s: no expression", p.Title, tg.RefID)
					_, err := expand(tg.Expr, values)
					require.NoError(t, err, "panel %q %s", p.Title, tg.RefID)
				}
				n += len(p.Targets)
			}
			require.NotZero(t, n, "dashboard has no queries")
		})
	}
	require.Equal(t, []string{"abr.json", "latency.json", "link.json"}, names, "the dashboards the README and the provisioning describe")
}

// compose.yaml, the provisioning files and prometheus.yml agree: every
// file compose mounts exists, Grafana's dashboard provider reads the
// folder the dashboards are mounted on, the data source points at the
// compose service, and its scrape spacing is Prometheus's.
func TestProvisioning(t *testing.T) {
	var compose struct {
		Services map[string]struct {
			Image   string   `yaml:"image"`
			Volumes []string `yaml:"volumes"`
		} `yaml:"services"`
	}
	readYAML(t, "compose.yaml", &compose)
	mounts := map[string]string{} // host path (relative to this folder) -> container path
	for name, s := range compose.Services {
		require.Regexp(t, `^[\w./-]+:v?\d+\.\d+\.\d+$`, s.Image, "service %s: image tag pinned to a release", name)
		for _, v := range s.Volumes {
			parts := strings.Split(v, ":")
			require.GreaterOrEqual(t, len(parts), 2, "service %s: volume %q", name, v)
			if !strings.HasPrefix(parts[0], ".") {
				continue // a named volume
			}
			_, err := os.Stat(parts[0])
			require.NoError(t, err, "service %s mounts %s", name, parts[0])
			mounts[filepath.Clean(parts[0])] = parts[1]
		}
	}
	require.Contains(t, compose.Services, "prometheus")
	require.Contains(t, compose.Services, "grafana")

	var providers struct {
		Providers []struct {
			Options struct {
				Path string `yaml:"path"`
			} `yaml:"options"`
		} `yaml:"providers"`
	}
	readYAML(t, filepath.Join("provisioning", "dashboards", "lab.yaml"), &providers)
	require.Len(t, providers.Providers, 1)
	require.Equal(t, mounts["dashboards"], providers.Providers[0].Options.Path, "the provider must read where compose mounts the dashboards")
	require.Equal(t, "/etc/grafana/provisioning", mounts["provisioning"])

	_, timeInterval, url := provisionedDatasource(t)
	require.Equal(t, "http://prometheus:9090", url, "the compose service, on its default port")
	var prom struct {
		Global struct {
			ScrapeInterval string `yaml:"scrape_interval"`
		} `yaml:"global"`
	}
	readYAML(t, "prometheus.yml", &prom)
	require.Equal(t, prom.Global.ScrapeInterval, timeInterval, "Grafana's $__rate_interval counts in the data source's timeInterval: it must be the scrape interval")
	require.Equal(t, "/etc/prometheus/prometheus.yml", mounts["prometheus.yml"])

	t.Run("promtool", func(t *testing.T) {
		promtool := need(t, "promtool", "it checks prometheus.yml")
		out, err := exec.Command(promtool, "check", "config", "prometheus.yml").CombinedOutput()
		require.NoError(t, err, "promtool check config:\n%s", out)
	})
}

// need finds a program of Debian's prometheus package, skipping when it is
// absent unless LAB_REQUIRE_PROMETHEUS=1 (CI), which makes its absence a
// failure.
func need(t *testing.T, program, why string) string {
	t.Helper()
	p, err := exec.LookPath(program)
	if err == nil {
		return p
	}
	msg := fmt.Sprintf("%s not found in PATH (Debian: apt-get install prometheus); %s", program, why)
	if os.Getenv("LAB_REQUIRE_PROMETHEUS") == "1" {
		t.Fatal(msg + ", and LAB_REQUIRE_PROMETHEUS=1 requires it")
	}
	t.Skip(msg + "; set LAB_REQUIRE_PROMETHEUS=1 to make this a failure")
	return ""
}

func TestExpand(t *testing.T) {
	v := map[string]string{"scenario": ".*", "__rate_interval": "5s"}
	got, err := expand(`rate(x{scenario=~"$scenario"}[$__rate_interval]) + y{s=~"${scenario}", t=~"${scenario:regex}"}`, v)
	require.NoError(t, err)
	require.Equal(t, `rate(x{scenario=~".*"}[5s]) + y{s=~".*", t=~".*"}`, got)
	_, err = expand(`x{s=~"$scenarioo"}`, v)
	require.ErrorContains(t, err, "scenarioo")
}
