package datagen

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
)

// Cuisines are the values of RestaurantDoc.Cuisines.
var Cuisines = [...]string{
	"american", "bbq", "pizza", "italian", "mexican", "chinese", "japanese",
	"thai", "vietnamese", "korean", "indian", "mediterranean",
	"middle_eastern", "french", "ethiopian", "seafood", "vegan", "breakfast",
}

// Allergens are the values of DishDoc.Allergens: the nine major food
// allergens of US labelling law, in this order.
var Allergens = [...]string{"milk", "egg", "fish", "shellfish", "tree_nut", "peanut", "wheat", "soy", "sesame"}

// Diets are the values of DishDoc.Diets, in this order.
var Diets = [...]string{"vegetarian", "vegan", "gluten_free", "dairy_free", "halal"}

// dishTemplate is one menu item. Allergens and diets follow the order of
// Allergens and Diets; cents is the price at price level 2.
type dishTemplate struct {
	name, desc string
	allergens  []string
	diets      []string
	cents      int64
}

// Short names keep the menu table readable.
var (
	vg  = []string{"vegetarian"}
	vgn = []string{"vegetarian", "vegan", "dairy_free"}
	vgf = []string{"vegetarian", "vegan", "gluten_free", "dairy_free"}
	gf  = []string{"gluten_free"}
	gdf = []string{"gluten_free", "dairy_free"}
	df  = []string{"dairy_free"}
)

// menus holds four dishes per cuisine. Only looked up by key, never
// iterated, so map order cannot leak into the output.
var menus = map[string][]dishTemplate{
	"american": {
		{"Cheeseburger", "Quarter-pound beef patty with cheddar, lettuce and pickles on a sesame bun.", []string{"milk", "wheat", "sesame"}, nil, 1395},
		{"Buffalo Wings", "Crispy wings tossed in hot sauce with blue cheese dip.", []string{"milk"}, gf, 1295},
		{"Mac and Cheese", "Elbow pasta baked in a three-cheese sauce.", []string{"milk", "wheat"}, vg, 995},
		{"Cobb Salad", "Chicken, bacon, egg, avocado and blue cheese over romaine.", []string{"milk", "egg"}, gf, 1395},
	},
	"bbq": {
		{"Brisket Plate", "Oak-smoked beef brisket with two sides.", nil, gdf, 1895},
		{"Pulled Pork Sandwich", "Slow-smoked pork shoulder with slaw on a brioche bun.", []string{"egg", "wheat"}, df, 1295},
		{"Smoked Half Chicken", "Dry-rubbed and smoked over hickory.", nil, gdf, 1595},
		{"Burnt Ends", "Caramelised brisket point in house barbecue sauce.", nil, gdf, 1695},
	},
	"pizza": {
		{"Margherita Pizza", "Tomato, fresh mozzarella and basil.", []string{"milk", "wheat"}, vg, 1495},
		{"Pepperoni Pizza", "Tomato, mozzarella and cup-and-char pepperoni.", []string{"milk", "wheat"}, nil, 1595},
		{"Garlic Knots", "Baked dough knots with garlic butter and parmesan.", []string{"milk", "wheat"}, vg, 695},
		{"Caesar Salad", "Romaine, croutons, parmesan and anchovy dressing.", []string{"milk", "egg", "fish", "wheat"}, nil, 1095},
	},
	"italian": {
		{"Spaghetti Carbonara", "Guanciale, egg yolk, pecorino and black pepper.", []string{"milk", "egg", "wheat"}, nil, 1895},
		{"Mushroom Risotto", "Arborio rice with porcini and parmesan.", []string{"milk"}, []string{"vegetarian", "gluten_free"}, 1795},
		{"Lasagna", "Layers of pasta, beef ragu, bechamel and mozzarella.", []string{"milk", "egg", "wheat"}, nil, 1995},
		{"Tiramisu", "Espresso-soaked ladyfingers with mascarpone cream.", []string{"milk", "egg", "wheat"}, vg, 895},
	},
	"mexican": {
		{"Carnitas Tacos", "Three corn tortillas with braised pork, onion and cilantro.", nil, gdf, 1195},
		{"Chicken Enchiladas", "Corn tortillas rolled with chicken in red sauce and cheese.", []string{"milk"}, gf, 1395},
		{"Bean and Cheese Burrito", "Refried beans, rice and cheese in a flour tortilla.", []string{"milk", "wheat"}, vg, 1095},
		{"Guacamole and Chips", "Avocado, lime, onion and jalapeno with corn chips.", nil, vgf, 795},
	},
	"chinese": {
		{"Kung Pao Chicken", "Wok-fried chicken with chilies and peanuts.", []string{"peanut", "wheat", "soy"}, df, 1495},
		{"Mapo Tofu", "Silken tofu in spicy bean sauce with Sichuan pepper.", []string{"wheat", "soy"}, df, 1295},
		{"Pork Dumplings", "Steamed dumplings with ginger soy dipping sauce.", []string{"wheat", "soy", "sesame"}, df, 995},
		{"Vegetable Fried Rice", "Jasmine rice with egg, peas, carrots and scallions.", []string{"egg", "soy"}, []string{"vegetarian", "dairy_free"}, 1095},
	},
	"japanese": {
		{"Salmon Nigiri", "Four pieces of salmon over seasoned rice.", []string{"fish", "soy"}, df, 895},
		{"Tonkotsu Ramen", "Pork bone broth, chashu, soft egg and noodles.", []string{"egg", "wheat", "soy", "sesame"}, df, 1595},
		{"Vegetable Tempura", "Lightly battered seasonal vegetables with tentsuyu.", []string{"egg", "wheat", "soy"}, []string{"vegetarian", "dairy_free"}, 1095},
		{"Chicken Katsu Curry", "Panko-crusted chicken with Japanese curry and rice.", []string{"milk", "egg", "wheat", "soy"}, nil, 1495},
	},
	"thai": {
		{"Pad Thai", "Rice noodles with egg, tofu, shrimp, tamarind and peanuts.", []string{"egg", "fish", "shellfish", "peanut", "soy"}, df, 1395},
		{"Green Curry", "Coconut green curry with Thai eggplant and basil.", []string{"fish"}, gdf, 1495},
		{"Tom Yum Soup", "Hot and sour broth with shrimp, lemongrass and lime leaf.", []string{"fish", "shellfish"}, gdf, 1195},
		{"Mango Sticky Rice", "Sweet coconut sticky rice with ripe mango.", nil, vgf, 795},
	},
	"vietnamese": {
		{"Beef Pho", "Rice noodles in star anise beef broth with herbs.", []string{"fish"}, gdf, 1395},
		{"Banh Mi", "Baguette with pork, pate, pickled vegetables and cilantro.", []string{"egg", "wheat", "soy"}, df, 1095},
		{"Fresh Spring Rolls", "Rice paper rolls with shrimp and peanut sauce.", []string{"shellfish", "peanut"}, gdf, 895},
		{"Lemongrass Tofu Vermicelli", "Grilled tofu over rice noodles with herbs and peanuts.", []string{"peanut", "soy"}, vgn, 1295},
	},
	"korean": {
		{"Bibimbap", "Rice with seasoned vegetables, beef, fried egg and gochujang.", []string{"egg", "wheat", "soy", "sesame"}, df, 1495},
		{"Kimchi Fried Rice", "Fried rice with kimchi, pork belly and a fried egg.", []string{"egg", "fish", "soy"}, df, 1295},
		{"Bulgogi", "Marinated grilled beef with rice and banchan.", []string{"wheat", "soy", "sesame"}, df, 1795},
		{"Japchae", "Sweet potato glass noodles with vegetables and sesame.", []string{"soy", "sesame"}, vgn, 1295},
	},
	"indian": {
		{"Chicken Tikka Masala", "Tandoori chicken in a creamy tomato sauce.", []string{"milk"}, []string{"gluten_free", "halal"}, 1695},
		{"Chana Masala", "Chickpeas simmered with tomato, onion and spices.", nil, vgf, 1295},
		{"Garlic Naan", "Tandoor-baked flatbread brushed with garlic butter.", []string{"milk", "wheat"}, vg, 395},
		{"Lamb Biryani", "Basmati rice layered with spiced lamb and fried onions.", []string{"milk", "tree_nut"}, []string{"gluten_free", "halal"}, 1895},
	},
	"mediterranean": {
		{"Falafel Plate", "Chickpea fritters with tahini, salad and pita.", []string{"wheat", "sesame"}, vgn, 1295},
		{"Chicken Shawarma Wrap", "Spit-roasted chicken with garlic sauce in a wrap.", []string{"milk", "wheat", "sesame"}, []string{"halal"}, 1195},
		{"Hummus and Pita", "Chickpea puree with olive oil and warm pita.", []string{"wheat", "sesame"}, vgn, 795},
		{"Greek Salad", "Tomato, cucumber, olives and feta.", []string{"milk"}, []string{"vegetarian", "gluten_free"}, 1095},
	},
	"middle_eastern": {
		{"Lamb Kofta", "Grilled spiced lamb skewers with rice.", nil, []string{"gluten_free", "dairy_free", "halal"}, 1695},
		{"Baba Ghanoush", "Smoky roasted eggplant dip with tahini.", []string{"sesame"}, vgf, 795},
		{"Fattoush", "Chopped salad with sumac and toasted pita.", []string{"wheat"}, vgn, 995},
		{"Baklava", "Layered filo with pistachios and honey syrup.", []string{"milk", "tree_nut", "wheat"}, vg, 595},
	},
	"french": {
		{"Croque Monsieur", "Ham and gruyere sandwich with bechamel.", []string{"milk", "egg", "wheat"}, nil, 1295},
		{"Steak Frites", "Grilled hanger steak with herb butter and fries.", []string{"milk"}, gf, 2895},
		{"French Onion Soup", "Caramelised onion broth under a gruyere crouton.", []string{"milk", "wheat"}, nil, 995},
		{"Creme Brulee", "Vanilla custard with a burnt sugar crust.", []string{"milk", "egg"}, []string{"vegetarian", "gluten_free"}, 895},
	},
	"ethiopian": {
		{"Doro Wat", "Chicken stewed in berbere with a hard-boiled egg.", []string{"egg"}, gdf, 1595},
		{"Misir Wat", "Spiced red lentil stew served on injera.", nil, vgf, 1295},
		{"Beef Tibs", "Sauteed beef with onion, rosemary and jalapeno.", nil, gdf, 1695},
		{"Veggie Combo", "Five vegetable stews on injera.", nil, vgf, 1495},
	},
	"seafood": {
		{"Fish and Chips", "Beer-battered cod with fries and tartar sauce.", []string{"milk", "egg", "fish", "wheat"}, nil, 1695},
		{"Lobster Roll", "Chilled lobster salad on a buttered roll.", []string{"milk", "egg", "shellfish", "wheat"}, nil, 2695},
		{"Clam Chowder", "Creamy New England chowder with oyster crackers.", []string{"milk", "shellfish", "wheat"}, nil, 995},
		{"Grilled Salmon", "Salmon fillet with lemon and seasonal vegetables.", []string{"fish"}, gdf, 2295},
	},
	"vegan": {
		{"Plant Burger", "Soy-based patty with vegan cheese on a potato bun.", []string{"wheat", "soy"}, vgn, 1495},
		{"Buddha Bowl", "Quinoa, roasted vegetables, tofu and tahini dressing.", []string{"soy", "sesame"}, vgf, 1395},
		{"Cauliflower Wings", "Battered cauliflower in buffalo sauce.", []string{"wheat"}, vgn, 995},
		{"Cashew Cheesecake", "Raw cashew cream on a date and nut crust.", []string{"tree_nut"}, vgf, 895},
	},
	"breakfast": {
		{"Buttermilk Pancakes", "Three pancakes with maple syrup and butter.", []string{"milk", "egg", "wheat"}, vg, 1095},
		{"Huevos Rancheros", "Fried eggs on corn tortillas with salsa and beans.", []string{"milk", "egg"}, []string{"vegetarian", "gluten_free"}, 1295},
		{"Avocado Toast", "Smashed avocado on sourdough with chili flakes.", []string{"wheat"}, vgn, 1095},
		{"Eggs Benedict", "Poached eggs, ham and hollandaise on an English muffin.", []string{"milk", "egg", "wheat"}, nil, 1495},
	},
}

// sides are on every menu.
var sides = []dishTemplate{
	{"French Fries", "Hand-cut fries with sea salt.", nil, vgf, 495},
	{"House Salad", "Mixed greens with a lemon vinaigrette.", nil, vgf, 695},
	{"Chocolate Cake", "Three layers of dark chocolate cake.", []string{"milk", "egg", "wheat", "soy"}, vg, 795},
	{"Iced Tea", "Fresh-brewed black tea.", nil, vgf, 295},
	{"Lemonade", "Freshly squeezed.", nil, vgf, 395},
}

// Words for restaurant names.
var (
	nameAdjectives = []string{"Golden", "Blue", "Little", "Red", "Green", "Silver", "Lucky", "Urban", "Rustic", "Royal",
		"Sunny", "Hidden", "Wild", "Smoky", "Twin", "Copper", "Salty", "Happy", "Grand", "Old Town"}
	nameNouns = []string{"Lotus", "Olive", "Dragon", "Oak", "Lantern", "Table", "Spoon", "Fork", "Garden", "Harbor",
		"Ember", "Basil", "Pepper", "Saffron", "Fig", "Bamboo", "Anchor", "Willow", "Pearl", "Bell"}
	namePeople = []string{"Rosa", "Tony", "Mei", "Sam", "Lucia", "Omar", "Kenji", "Maria", "Abebe", "Hana",
		"Luca", "Priya", "Jack", "Nina", "Minh", "Joe"}
	// venues is looked up by cuisine, never iterated.
	venues = map[string][]string{
		"american":       {"Diner", "Kitchen", "Tavern", "Grill"},
		"bbq":            {"Smokehouse", "BBQ", "Pit"},
		"pizza":          {"Pizzeria", "Pizza Co.", "Slice Shop"},
		"italian":        {"Trattoria", "Osteria", "Ristorante"},
		"mexican":        {"Taqueria", "Cantina", "Cocina"},
		"chinese":        {"Kitchen", "Noodle House", "Dumpling House"},
		"japanese":       {"Sushi Bar", "Ramen", "Izakaya"},
		"thai":           {"Thai Kitchen", "Thai Bistro", "Thai Cafe"},
		"vietnamese":     {"Pho", "Banh Mi Shop", "Noodle Bar"},
		"korean":         {"Korean BBQ", "Tofu House", "Korean Kitchen"},
		"indian":         {"Tandoor", "Curry House", "Indian Kitchen"},
		"mediterranean":  {"Grill", "Mezze", "Kitchen"},
		"middle_eastern": {"Shawarma", "Grill", "Bakery"},
		"french":         {"Bistro", "Brasserie", "Cafe"},
		"ethiopian":      {"Ethiopian Kitchen", "Injera House", "Cafe"},
		"seafood":        {"Oyster Bar", "Fish House", "Crab Shack"},
		"vegan":          {"Plant Kitchen", "Greens", "Cafe"},
		"breakfast":      {"Cafe", "Pancake House", "Diner"},
	}
	// dishPrefixes tell apart repeats on a menu longer than its pool.
	dishPrefixes = []string{"House", "Spicy", "Classic", "Family Size", "Chef's", "Half"}
	// dishNotes end descriptions; updates swap them.
	dishNotes = []string{"Served with a side salad.", "Made to order.", "Available for a limited time.",
		"Ask about our gluten-free option.", "Now with house-made sauce.", "Serves two."}
	// priceFactors scale template prices by price level 1 to 4.
	priceFactors = [...]float64{0.8, 1.0, 1.3, 1.8}
)

func pick[T any](rng *rand.Rand, xs []T) T { return xs[rng.IntN(len(xs))] }

// newRestaurantDoc draws a restaurant placed around the named city.
func newRestaurantDoc(rng *rand.Rand, city string) RestaurantDoc {
	primary := Cuisines[rng.IntN(len(Cuisines))]
	cuisines := []string{primary}
	for range rng.IntN(3) { // 0 to 2 more
		if c := Cuisines[rng.IntN(len(Cuisines))]; !slices.Contains(cuisines, c) {
			cuisines = append(cuisines, c)
		}
	}
	// Price levels 1 to 4 with weights 30, 45, 20, 5 %.
	level := 1
	u := rng.Float64()
	for _, cum := range [...]float64{0.30, 0.75, 0.95} {
		if u >= cum {
			level++
		}
	}
	return RestaurantDoc{
		Name:       restaurantName(rng, primary, city),
		Cuisines:   cuisines,
		City:       city,
		PriceLevel: level,
		Rating:     math.Round(min(max(4+0.4*rng.NormFloat64(), 1), 5)*10) / 10,
	}
}

func restaurantName(rng *rand.Rand, cuisine, city string) string {
	venue := pick(rng, venues[cuisine])
	switch rng.IntN(5) {
	case 0:
		return pick(rng, nameAdjectives) + " " + pick(rng, nameNouns) + " " + venue
	case 1:
		return pick(rng, nameNouns) + " " + venue
	case 2:
		return pick(rng, namePeople) + "'s " + venue
	case 3:
		return city + " " + venue
	default:
		return "The " + pick(rng, nameAdjectives) + " " + pick(rng, nameNouns)
	}
}

// updateRestaurantDoc applies one realistic edit to d in place: a new
// rating (40 %), price level (25 %), name (15 %) or cuisine list (20 %;
// the rating instead when the list can neither grow nor shrink). Only a
// new name can, rarely, equal the old one.
func updateRestaurantDoc(rng *rand.Rand, d *RestaurantDoc) {
	switch u := rng.Float64(); {
	case u < 0.40:
		// The rating, below.
	case u < 0.65:
		if d.PriceLevel == 4 || (d.PriceLevel > 1 && rng.IntN(2) == 0) {
			d.PriceLevel--
		} else {
			d.PriceLevel++
		}
		return
	case u < 0.80:
		d.Name = restaurantName(rng, d.Cuisines[0], d.City)
		return
	default:
		c := Cuisines[rng.IntN(len(Cuisines))]
		if len(d.Cuisines) < 3 && !slices.Contains(d.Cuisines, c) {
			d.Cuisines = append(slices.Clip(d.Cuisines), c)
			return
		}
		if len(d.Cuisines) > 1 {
			d.Cuisines = slices.Clone(d.Cuisines[:len(d.Cuisines)-1])
			return
		}
	}
	step := float64(1+rng.IntN(3)) / 10
	if d.Rating+step > 5 || (d.Rating-step >= 1 && rng.IntN(2) == 0) {
		step = -step
	}
	d.Rating = math.Round((d.Rating+step)*10) / 10
}

// menu returns the shuffled dish pool of a restaurant: the dishes of its
// cuisines followed by the sides.
func menu(rng *rand.Rand, d RestaurantDoc) []dishTemplate {
	var pool []dishTemplate
	for _, c := range d.Cuisines {
		pool = append(pool, menus[c]...)
	}
	rng.Shuffle(len(pool), func(i, j int) { pool[i], pool[j] = pool[j], pool[i] })
	return append(pool, sides...)
}

// newDishDoc is the j-th dish (0-based) of a menu at the given price level.
func newDishDoc(rng *rand.Rand, pool []dishTemplate, j, level int) DishDoc {
	t := pool[j%len(pool)]
	name := t.name
	if round := j / len(pool); round > 0 {
		name = dishPrefixes[(round-1)%len(dishPrefixes)] + " " + name
	}
	desc := t.desc
	if rng.IntN(10) < 3 {
		desc += " " + pick(rng, dishNotes)
	}
	cents := float64(t.cents) * priceFactors[level-1] * (0.9 + 0.25*rng.Float64())
	return DishDoc{
		Name:        name,
		Description: desc,
		Allergens:   orEmpty(t.allergens),
		Diets:       orEmpty(t.diets),
		PriceCents:  menuPrice(cents),
	}
}

// menuPrice rounds to a menu-style price ending in 45 or 95 cents, at least
// $1.95.
func menuPrice(cents float64) int64 {
	return max(int64(math.Round(cents/50))*50-5, 195)
}

func orEmpty(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// updateDishDoc applies one realistic edit to d in place: a new price
// (60 %), description note (25 %) or a newly disclosed cross-contact
// allergen (15 %; one that no diet label excludes, so Diets stay true).
func updateDishDoc(rng *rand.Rand, d *DishDoc) {
	u := rng.Float64()
	if u >= 0.85 {
		added := crossContact[rng.IntN(len(crossContact))]
		if !slices.Contains(d.Allergens, added) {
			d.Allergens = append(slices.Clone(d.Allergens), added)
			slices.SortFunc(d.Allergens, func(a, b string) int {
				return slices.Index(Allergens[:], a) - slices.Index(Allergens[:], b)
			})
			return
		}
		u = 0 // already listed: change the price instead
	}
	if u < 0.60 {
		old := d.PriceCents
		d.PriceCents = menuPrice(float64(old) * (0.95 + 0.25*rng.Float64()))
		if d.PriceCents == old {
			d.PriceCents += 50
		}
		return
	}
	base, note := d.Description, -1
	for i, n := range dishNotes {
		if strings.HasSuffix(base, " "+n) {
			base, note = strings.TrimSuffix(base, " "+n), i
			break
		}
	}
	// A different note than before, so the description always changes.
	next := rng.IntN(len(dishNotes))
	if note >= 0 {
		if next = rng.IntN(len(dishNotes) - 1); next >= note {
			next++
		}
	}
	d.Description = base + " " + dishNotes[next]
}

// crossContact are the allergens an update may add: none of Diets rules
// them out.
var crossContact = [...]string{"tree_nut", "soy", "sesame"}
