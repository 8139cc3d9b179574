package datagen

// readmeText is the template of testdata/README.md; readmeFixture fills it
// in from the generated files so the totals always match them.
const readmeText = `# testdata

Synthetic, deterministic fixtures for geoshard. Do not edit them by hand;
regenerate all of them from the module root with

` + "```" + `
go run ./internal/datagen/cmd/gendata -out testdata
` + "```" + `

or, equivalently, ` + "`go generate ./internal/datagen`" + `. The same code and
city data always produce byte-identical files. ` + "`TestFixtures`" + ` in
` + "`internal/datagen`" + ` regenerates the US files and this README and fails if
they differ from the committed ones; it only sanity-checks the world loads.

## How the data is made

Restaurants are placed around the real cities of the embedded GeoNames
extract (` + "`internal/datagen/data/cities.csv`" + `, cities with population
>= 15,000):

- restaurants are apportioned to cities in proportion to population
  (largest-remainder method, so totals are exact);
- each restaurant sits at a 2-D Gaussian offset from its city centre with
  sigma = 1.5 km · (population / 50,000)^0.4 per axis (≈ 0.9 km for a
  town of 15,000, ≈ 11.5 km for New York City);
- dishes per restaurant are log-normal with median {{.USCfg.MedianDishes}} and sigma
  {{.USCfg.DishSigma}} (mean ≈ {{.DishMean}}), at least 1;
- a restaurant contributes 1 + dishes documents to the S2 cell (level {{.Level}})
  that contains it.

## Files

| file | what | seed | restaurants | docs | rows | bytes |
| --- | --- | --- | ---: | ---: | ---: | ---: |
| ` + "`{{.US.Name}}`" + ` | US planning loads | {{index .Seeds 0}} | {{n .US.Restaurants}} | {{n .US.Docs}} | {{n .US.Rows}} | {{n (len .US.Data)}} |
| ` + "`{{.Heldout.Name}}`" + ` | US held-out loads | {{index .Seeds 1}} | {{n .Heldout.Restaurants}} | {{n .Heldout.Docs}} | {{n .Heldout.Rows}} | {{n (len .Heldout.Data)}} |
| ` + "`{{.Queries.Name}}`" + ` | US held-out queries | {{index .Seeds 2}} | {{n .Queries.Restaurants}} | – | {{n .Queries.Rows}} | {{n (len .Queries.Data)}} |
| ` + "`{{.World.Name}}`" + ` | world loads | {{index .Seeds 3}} | {{n .World.Restaurants}} | {{n .World.Docs}} | {{n .World.Rows}} | {{n (len .World.Data)}} |

For the loads files, rows are the non-empty level-{{.Level}} cells (cells
without restaurants are not listed).

- ` + "`{{.US.Name}}`" + ` — ` + "`datagen.DefaultUS()`" + `: {{n .USCfg.Restaurants}} restaurants in the
  {{n .USCities}} {{join .USCfg.Countries}} cities. Use it to plan shard placement. Fullest cell:
  {{n .US.MaxCellDocs}} docs.
- ` + "`{{.Heldout.Name}}`" + ` — the same configuration with seed {{index .Seeds 1}}: an
  independent sample for checking a plan made from the planning loads.
  Fullest cell: {{n .Heldout.MaxCellDocs}} docs.
- ` + "`{{.Queries.Name}}`" + ` — {{n .Queries.Rows}} radius searches drawn from the seed-{{index .Seeds 1}}
  restaurants with seed {{index .Seeds 2}}: each centre is a uniformly chosen
  restaurant moved uniformly within {{.Jitter}} km, so searches follow where the
  documents are; the radius is 5, 10, 15, 25 or 50 miles (1 mile = 1,609.344 m),
  each equally likely.
- ` + "`{{.World.Name}}`" + ` — ` + "`datagen.DefaultWorld()`" + `: {{n .WorldCfg.Restaurants}} restaurants in all
  {{n .Cities}} cities. Fullest cell: {{n .World.MaxCellDocs}} docs.

## Formats

` + "`loads/*.csv`" + `: header ` + "`cell,docs`" + `; ` + "`cell`" + ` is the S2 cell token
(` + "`CellID.ToToken()`" + `) at level {{.Level}}, ` + "`docs`" + ` the number of documents
(restaurants + dishes) in it. Rows are sorted by ascending cell ID, each cell
appears once. Read with ` + "`router.ReadLoads`" + `.

` + "`queries/*.csv`" + `: header ` + "`lat,lng,radius_m`" + `; WGS84 degrees to 5 decimals
and the radius in metres to 1 decimal. Read with ` + "`router.ReadQueries`" + `.

## Caveats

- **Double counting in big cities.** GeoNames lists city parts as places of
  their own, e.g. Brooklyn, Queens, Manhattan, The Bronx and Staten Island
  next to New York City, plus neighbourhoods such as East New York. They are
  kept, so the New York area receives roughly twice its share of
  restaurants; other large cities are affected the same way, to a lesser
  degree.
- **City proper, not metro area.** Populations are those of the municipality
  (GeoNames, March 2020), from censuses of different years. Suburbs count only
  if they are cities of 15,000 or more themselves; smaller places get nothing.
- **No geography.** Offsets ignore coastlines and borders, so some restaurants
  land in water or across a border; latitude is clamped to ±89.9° and
  longitude wrapped.
- **Held-out is independent in randomness only.** It uses the same cities and
  method as the planning loads, so it tests sampling noise, not model error.

## Attribution

{{.Attribution}}
`
