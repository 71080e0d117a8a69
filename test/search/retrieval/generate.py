#!/usr/bin/env python3
"""Generate the labelled retrieval evaluation set (conversations.json).

Original synthetic text written for lethe; not derived from any public
benchmark. Deterministic: the same seed always yields byte-identical output.
Standard library only.

    python3 test/search/retrieval/generate.py
"""

import datetime as dt
import json
import os
import random
import re
import sys
from collections import Counter

SEED = 20250611
N_CONVERSATIONS = 26
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "conversations.json")


def L(block):
    """Split a triple-quoted block into non-empty stripped lines."""
    return [ln.strip() for ln in block.strip("\n").split("\n") if ln.strip()]


# ---------------------------------------------------------------------------
# Names. Speakers are unique across the whole set; third parties (partners,
# kids, siblings, friends, authors) come from a disjoint pool.
# ---------------------------------------------------------------------------

SPEAKERS_F = L("""
Alice
Maya
Priya
Carla
Nina
Sofia
Hannah
Leah
Zoe
Ines
Freya
Mei
Amara
Rosa
Tessa
Yara
Elif
Greta
Jade
Keira
Lena
Mira
Nadia
Paula
Rhea
Sienna
Talia
Vera
""")
SPEAKERS_M = L("""
Bob
Tom
Dan
Sam
Omar
Raj
Leo
Felix
Hugo
Ivan
Jonah
Kai
Luca
Marco
Nate
Oscar
Pete
Quentin
Ravi
Sven
Theo
Umar
Victor
Wes
Yusuf
Zane
Arjun
Caleb
""")
OTHERS_F = L("""
Agnes
Beatrix
Clara
Daphne
Edith
Fiona
Gemma
Harriet
Ingrid
Josie
Kirsten
Lucia
Maren
Noor
Orla
Petra
Rosalind
Saskia
Thea
Ursula
Violet
Willa
Yvonne
Brigid
Celeste
Dora
Esme
Flora
Imogen
Marisol
""")
OTHERS_M = L("""
Aldo
Bastian
Cormac
Dario
Elliot
Finn
Gideon
Hector
Idris
Kasper
Lorcan
Matteo
Niall
Otto
Piers
Rafael
Silas
Tobias
Ulrich
Vince
Wilbur
Xavier
Yannick
Zeke
Anton
Bruno
Cyril
Declan
Ezra
Florian
""")
SURNAMES = L("""
Okafor
Lindqvist
Marchetti
Havel
Brennan
Castellanos
Nakamura
Whitlock
Adeyemi
Sorensen
Petrakis
Quade
Ferreira
Moreau
Kowalczyk
Ashworth
Iyer
Fairbanks
Novak
Calloway
Takeda
Ostrowski
Delgado
Harrow
Mbatha
Rourke
Vasquez
Engel
""")

# ---------------------------------------------------------------------------
# Slot values.
# ---------------------------------------------------------------------------

CITIES = L("""
Porto
Lisbon
Leeds
Manchester
Bristol
Glasgow
Edinburgh
Cardiff
Dublin
Cork
Galway
Rotterdam
Utrecht
Ghent
Antwerp
Lyon
Marseille
Bordeaux
Nantes
Toulouse
Seville
Valencia
Bilbao
Malaga
Turin
Bologna
Naples
Verona
Munich
Hamburg
Leipzig
Cologne
Dresden
Vienna
Graz
Zurich
Basel
Krakow
Gdansk
Prague
Brno
Budapest
Ljubljana
Zagreb
Tallinn
Riga
Vilnius
Helsinki
Tampere
Gothenburg
Malmo
Aarhus
Bergen
Toronto
Montreal
Halifax
Calgary
Portland
Denver
Austin
Pittsburgh
Minneapolis
Sacramento
Boise
Tucson
Raleigh
Madison
Buffalo
Melbourne
Adelaide
Wellington
Auckland
""")
PLACES = L("""
Kyoto
Reykjavik
Marrakech
Crete
the Dolomites
Patagonia
Hanoi
Lake Bled
the Azores
Cape Town
Oaxaca
Tbilisi
Sicily
Bali
the Lofoten Islands
Seoul
Mexico City
Istanbul
Santorini
the Scottish Highlands
Banff
Tasmania
Madeira
Sardinia
Buenos Aires
Cartagena
Cusco
Chiang Mai
Penang
Osaka
Hokkaido
Sri Lanka
Zanzibar
Jordan
Malta
Corsica
Dubrovnik
the Faroe Islands
Yosemite
New Orleans
Nashville
Quebec City
Vancouver Island
Cinque Terre
""")
STREET_A = L("""
Rose
Elm
Juniper
Harbour
Mill
Canal
Chapel
Orchard
Foundry
Willow
Larch
Station
Market
Quarry
Bell
Anchor
Cedar
Kingfisher
Lantern
Copper
Tanner
Weaver
Brook
Meadow
Granary
Ropewalk
Beacon
Heron
Thistle
Marigold
Ashgrove
Falcon
Glebe
Pilgrim
Saltmarsh
Sorrel
Wren
Linden
Oriel
Bramley
""")
STREET_B = L("""
Street
Road
Lane
Avenue
Terrace
Close
Crescent
Way
Row
Place
""")
PETNAMES = L("""
Pickle
Biscuit
Mango
Pepper
Waffles
Noodle
Olive
Bean
Pretzel
Maple
Clementine
Toast
Dumpling
Ziggy
Moose
Otis
Luna
Miso
Tofu
Basil
Ginger
Pumpkin
Nacho
Sprout
Pixel
Comet
Bramble
Fudge
Kiwi
Peanut
Marble
Gizmo
Rocket
Sushi
Teddy
Wasabi
Yoda
Chewie
Frodo
Bagel
Crumpet
Muffin
Nutmeg
Paprika
Rolo
Scout
Tinker
Walnut
Cinder
Domino
Figaro
Gus
Hamish
Igor
Mochi
Nugget
Oreo
Poppy
Quincy
Ruby
Sox
Tango
Vinnie
Wally
Yeti
Pudding
Squash
Custard
Brioche
Pancake
""")
# species: (noun used in questions, text variants)
SPECIES = [
    ("dog", ["dog", "dog", "rescue dog", "beagle", "border collie", "puppy"]),
    ("cat", ["cat", "cat", "tabby", "kitten", "black cat"]),
    ("rabbit", ["rabbit", "rabbit", "bunny"]),
    ("parrot", ["parrot", "parrot"]),
    ("hamster", ["hamster"]),
    ("tortoise", ["tortoise"]),
    ("gecko", ["gecko", "leopard gecko"]),
    ("ferret", ["ferret"]),
    ("guinea pig", ["guinea pig"]),
    ("cockatiel", ["cockatiel"]),
    ("bearded dragon", ["bearded dragon"]),
]
EMP_A = L("""
Northwind
Bluefern
Copperleaf
Halden
Brightwater
Kestrel
Ironbark
Tidewell
Lumen
Stonebridge
Quillon
Redshank
Silverline
Foxglove
Amberly
Larkspur
Meridian
Thornbury
Cobalt
Vantage
Oakhurst
Pennant
Saltire
Wexford
""")
EMP_B = L("""
Logistics
Analytics
Health
Studios
Bank
Robotics
Foods
Insurance
Labs
Energy
Media
Architects
Pharma
Games
Software
Consulting
Clinic
Engineering
""")
ROLES = L("""
nurse
data analyst
sous chef
electrician
primary school teacher
product designer
paralegal
physiotherapist
accountant
UX researcher
pharmacist
software engineer
project manager
sales rep
architect
graphic designer
veterinary nurse
lab technician
copywriter
logistics coordinator
HR manager
civil engineer
radiographer
translator
social worker
dental hygienist
carpenter
florist
marketing manager
quality inspector
speech therapist
recruiter
bookkeeper
video editor
structural engineer
customer success lead
research scientist
events coordinator
""")
DISHES = L("""
ramen
lasagna
pad thai
shakshuka
butter chicken
pierogi
paella
pho
tacos al pastor
mushroom risotto
bibimbap
moussaka
fish and chips
pork dumplings
katsu curry
falafel wraps
spaghetti carbonara
jollof rice
khachapuri
goulash
okonomiyaki
laksa
enchiladas
potato gnocchi
chicken tikka masala
sushi
pulled pork
mac and cheese
banh mi
chili con carne
lamb tagine
biryani
spanakopita
poke bowls
lentil dal
bao buns
ceviche
arancini
schnitzel
tiramisu
cheesecake
apple crumble
""")
INSTRUMENTS = L("""
piano
cello
violin
ukulele
bass guitar
drums
saxophone
trumpet
banjo
harmonica
flute
accordion
mandolin
clarinet
harp
acoustic guitar
electric guitar
trombone
double bass
synthesizer
""")
ALLERGENS = L("""
peanuts
shellfish
tree nuts
sesame
kiwi
strawberries
eggs
mustard
soy
celery
mango
walnuts
cashews
prawns
fish
cow's milk
wheat
buckwheat
pineapple
avocado
hazelnuts
lupin
""")
CONDITIONS = L("""
a sprained ankle
a broken wrist
bronchitis
tonsillitis
a slipped disc
tennis elbow
pneumonia
shingles
a torn knee ligament
a kidney stone
a mild concussion
food poisoning
the flu
a frozen shoulder
plantar fasciitis
an ear infection
vertigo
a chest infection
glandular fever
a fractured toe
sinusitis
whiplash
""")
HOBBIES = L("""
bouldering
pottery
birdwatching
sourdough baking
woodworking
trail running
knitting
chess
sea swimming
salsa dancing
film photography
gardening
calligraphy
beekeeping
kayaking
watercolour painting
paddleboarding
embroidery
fencing
archery
improv comedy
fly fishing
origami
home brewing
geocaching
foraging
life drawing
surfing
orienteering
candle making
""")
CARS = L("""
Toyota Corolla
Honda Civic
VW Golf
Skoda Octavia
Ford Fiesta
Mazda 3
Subaru Outback
Tesla Model 3
Nissan Leaf
Kia Niro
Hyundai Ioniq
Volvo V60
Mini Cooper
Fiat Panda
Renault Clio
Peugeot 208
Toyota RAV4
Jeep Wrangler
BMW 3 Series
Audi A4
Honda Jazz
Citroen Berlingo
Dacia Duster
Seat Ibiza
Kia Ceed
Volvo XC40
Polestar 2
Mazda MX-5
Ford Ranger
Suzuki Swift
""")
COLOURS = L("""
red
silver
dark blue
white
black
green
grey
yellow
""")
ITEMS = L("""
a standing desk
a road bike
an espresso machine
a kayak
a sofa bed
a drone
a robot vacuum
a telescope
an air fryer
a projector
a sewing machine
a 3D printer
a four-person tent
a record player
a treadmill
a pizza oven
noise-cancelling headphones
a new camera lens
an e-reader
a rowing machine
a dishwasher
a memory foam mattress
an electric scooter
a vintage armchair
an oak dining table
a smartwatch
a bread maker
a gaming laptop
a hammock
a chest freezer
a heated blanket
a label maker
a mini fridge
a stand mixer
""")
BOOK_A = L("""
Glass
Silent
Paper
Hollow
Last
Salt
Winter
Borrowed
Crooked
Quiet
Northern
Burning
Velvet
Iron
Drowned
Amber
Forgotten
Sixth
Hidden
Patient
""")
BOOK_B = L("""
Orchard
Harbour
Archive
Lighthouse
Kingdom
Cartographer
Tide
Garden
Signal
Ferry
Clockmaker
Season
Valley
Mirror
Atlas
Beekeeper
Orchestra
Meridian
Inheritance
Apprentice
""")
TEAMS = L("""
Arsenal
Celtic
Leeds United
Bayern Munich
Ajax
Benfica
the Boston Celtics
the Chicago Cubs
the Green Bay Packers
the Toronto Maple Leafs
Real Betis
Napoli
Borussia Dortmund
the Seattle Sounders
the All Blacks
Leinster
the Golden State Warriors
Liverpool
Newcastle
Everton
Aston Villa
Brighton
Feyenoord
Sevilla
Lazio
the New York Mets
the Denver Nuggets
the Montreal Canadiens
Munster
Saracens
""")
LANGUAGES = L("""
Portuguese
Japanese
Korean
Italian
German
Dutch
Welsh
Irish
Mandarin
Arabic
Spanish
Greek
Polish
Turkish
Swedish
Norwegian
Hindi
Swahili
Czech
Finnish
Icelandic
French
Hungarian
Vietnamese
""")
PLANS = L("""
go camping by the lake
run my first 10k
visit the flea market by the river
drive down to the coast
repaint the bathroom
try out the new climbing wall
go to a wine tasting
see a stand-up show
volunteer at the food bank
go strawberry picking
build the wardrobe that's been sitting in boxes
do an escape room
hike up to the old reservoir
host a board game night
go to the record fair
take the ferry out to the island
see an open-air concert in the park
take a cooking class
clear out the garage
visit the botanical gardens
go on a cycling tour of the vineyards
try paddling on the canal
go to a street food festival
see the new exhibition at the art museum
go to a pub quiz with my old team
spend a day at the spa
""")
GOALS = L("""
a deposit on a flat
a trip to Japan
a campervan
my wedding
a master's degree
a new roof
driving lessons
a sabbatical year
a proper road bike
braces
a new laptop
a motorbike
a loft conversion
a round-the-world ticket
an electric car
a new kitchen
a sailing course
a pottery kiln
a fancy coffee setup
an emergency fund
""")
MODES = [
    ("cycle", "bike"),
    ("take the train", "train"),
    ("take the bus", "bus"),
    ("take the tram", "tram"),
    ("catch the ferry", "ferry"),
    ("ride my e-scooter", "scooter"),
    ("ride my motorbike", "motorbike"),
]
ARTISTS = L("""
Marigold Static
The Quiet Foxes
Harbour Lights Club
Ninefold
Glass Meridian
Coral Telephone
The Sunday Wolves
Paper Satellites
Moth and Lantern
Dune Choir
Golden Ferry
Static Orchard
The Velvet Crows
Low Ceiling
Neon Pilgrims
Cloud Factory
Salt and Ember
The Midnight Tailors
Kite Season
Bright Kettle
Lunar Arcade
The Slow Tangerines
Willow Engine
Copper Sails
Northern Ballroom
The Borrowed Bees
""")
GYM_ACTS = L("""
lifting weights
spin classes
swimming laps
boxing classes
pilates
rowing
circuit training
running on the treadmill
CrossFit
kettlebell sessions
""")
GYM_TIMES = L("""
before work
at lunchtime
after work
early in the morning
in the evenings
""")
FREQS = ["two", "three", "four", "five"]
KID_SPORTS = L("""
football
swimming
gymnastics
judo
basketball
hockey
ballet
karate
tennis
rugby
athletics
netball
""")
MONTHS = ["January", "February", "March", "April", "May", "June", "July",
          "August", "September", "October", "November", "December"]

# ---------------------------------------------------------------------------
# Fact types. Each has first-person statement templates ("state"), question
# templates (single: reuses the fact's words; para: other words; none: asked
# of someone who never stated it), a sentiment for the partner's reaction,
# lead-in questions the partner may ask first, and echo follow-ups.
# Question placeholders: {P} person, {he}/{his}/{him} pronouns.
# ---------------------------------------------------------------------------

F = {}

F["home"] = dict(
    sent="pos",
    state=L("""
I finally moved into a flat on {street} in {city}, still living out of boxes though.
Got the keys to my new place yesterday! It's {num} {street}, {city}.
So I've officially relocated to {city}. Little one-bed on {street}.
We signed the lease on an apartment in {city}, right on {street}, and moved in last weekend.
Guess who lives in {city} now? Me! Found a tiny place on {street}.
My new address is {num} {street} in {city}, I'll text it to you properly later.
The move to {city} is done. The flat on {street} is small but the light is great.
I'm on {street} now, in {city}. Took three trips with a rented van.
Just moved to {city}! My place is on {street}, right above a bakery.
Spent the whole weekend carrying furniture up to my new flat on {street}. {city} is growing on me already.
I live in {city} now, can you believe it? A rented house on {street}.
Officially a {city} resident as of Saturday. The apartment's on {street}.
Unpacked the last box at the new place on {street} in {city} last night.
Ended up taking that flat in {city}, the one on {street} with the tiny balcony.
Moved house last week, I'm at {num} {street}, {city} now.
I've settled into a shared house on {street} over in {city}.
"""),
    update=L("""
Big change: I left {city} and moved to {city2}. New place is on {street2}.
I'm moving again, sorry! Said goodbye to {city}, now renting on {street2} in {city2}.
Update on the housing saga: I'm in {city2} now, on {street2}. {city} got too expensive.
Packed up everything in {city} and moved to {city2} last week, a flat on {street2}.
So {city} didn't last. I'm living on {street2} in {city2} as of this month.
New address again: {num2} {street2}, {city2}. Leaving {city} was harder than I thought.
I relocated from {city} to {city2} for good. Found a place on {street2} near the river.
Finally out of {city}! Just moved into a house on {street2} in {city2}.
Goodbye {city}, hello {city2}. The new flat is on {street2} and it has a real oven.
Moved out of the {city} place on the weekend, I'm on {street2} in {city2} now.
"""),
    single=L("""
Which city does {P} live in?
What street is {P}'s flat on?
Which street does {P} live on?
What is the address of {P}'s place?
"""),
    para=L("""
Where is {P} based these days?
Where does {P} call home?
Which town is {P} residing in?
Where can {P} be found when {he} is not out?
Which part of the world does {P} stay in now?
"""),
    lead=L("""
How's the housing situation going?
Any news on the flat front?
Did the move ever happen in the end?
"""),
    follow=L("""
{city} is lovely, I went there once years ago.
Oh nice, {city}! Is the neighbourhood nice?
{street} sounds so charming.
Send me pictures of the new place!
"""),
)

F["job"] = dict(
    sent="pos",
    state=L("""
I started as {a_role} at {employer} last week, still learning everyone's names.
Big news: {employer} hired me! I'm their new {role}.
Signed the contract today, I'm joining {employer} as {a_role}.
First day as {a_role} at {employer} went okay, I think.
I'm {a_role} at {employer} now, the onboarding is intense.
So I took the {role} position at {employer}. Start date was Monday.
Officially employed again! {A_role} at {employer}.
My new job is at {employer}, working as {a_role}.
Accepted the offer from {employer}: {role}, full time, started this week.
Been at {employer} for two weeks now as {a_role} and I already love the team.
I got the {role} job at {employer}! The interview was a blur.
Just finished my first month as {a_role} with {employer}.
{employer} took me on as {a_role}, so that's my life now.
I'm finally working as {a_role}, at {employer} of all places.
Started at {employer} on Monday. {A_role}, like I always wanted.
"""),
    update=L("""
I quit {employer}. Started as {a_role2} at {employer2} this Monday.
Changed jobs! I'm {a_role2} at {employer2} now, {employer} was burning me out.
Left {employer} last month and joined {employer2} as {a_role2}.
New job update: {role2} at {employer2}. Goodbye {employer}!
I got poached by {employer2}, I'm their {role2} now. Handed my badge back to {employer} on Friday.
So I'm not at {employer} anymore, {employer2} offered me a {role2} role and I took it.
Started at {employer2} this week as {a_role2}. Weird to not be at {employer} anymore.
I moved from {employer} to {employer2}, new title is {role2}.
Resigned from {employer}! I'm {a_role2} with {employer2} starting today.
"""),
    single=L("""
Where does {P} work?
What company does {P} work for?
What is {P}'s job title?
What job does {P} have at {employer}?
"""),
    para=L("""
What does {P} do for a living?
Who employs {P}?
What is {P}'s occupation?
Who pays {P}'s salary?
What line of work is {P} in?
What profession does {P} have?
"""),
    lead=L("""
How's work treating you?
Anything new on the job front?
Are you still hunting for something new?
"""),
    follow=L("""
{employer}, nice! I've heard good things about them.
Congrats!! You deserve it.
Wait, is {employer} the one with the fancy office?
"""),
)

F["jobcity"] = dict(
    sent="neu",
    state=L("""
Our office is in {jobcity}, so it's an early start every morning.
The annoying part is the office is all the way over in {jobcity}.
{employer} is headquartered in {jobcity}, so I'm there three days a week.
I have to be in the {jobcity} office on Tuesdays and Thursdays.
The whole team sits in {jobcity}, which means long days.
Getting to {jobcity} for work is killing me slowly.
Work is in {jobcity}, about an hour door to door.
They want everyone in the {jobcity} office at least twice a week.
The {employer} building in {jobcity} has a rooftop garden, which helps.
Funny thing, my desk is in {jobcity} but half my team is remote.
"""),
)

F["pet"] = dict(
    sent="pos",
    state=L("""
My {sp} {petname} knocked my coffee off the table again this morning.
We adopted a {sp} last weekend and named it {petname}.
{petname}, my {sp}, has decided 5am is breakfast time.
I can't stay out late tonight, {petname} has a vet appointment. Poor {sp} hates the carrier.
Brought home a little {sp} from the shelter. {petname} is already running the house.
My {sp} {petname} chewed through a charger cable. Third one this month.
Do you want to see a picture of {petname}? Best {sp} in the world, I'm not biased.
{petname} the {sp} turned one yesterday, so we got a tiny cake.
I finally caved and got a {sp}. Meet {petname}!
Every time I open my laptop, {petname} sits on the keyboard. Classic {sp} behaviour.
Our {sp} {petname} got into the bin last night and it was carnage.
I've had my {sp} {petname} for about a month now and I can't imagine life without it.
The neighbours love my {sp}, they keep sneaking {petname} treats.
{petname} is the name of my new {sp}, in case you hear me yelling it.
My little {sp} {petname} has figured out how to open the cupboard.
"""),
    single=L("""
What is the name of {P}'s {q}?
What is {P}'s {q} called?
"""),
    para=L("""
Does {P} have any animals at home?
What creature shares {P}'s home?
Which animal does {P} look after?
Who is {P}'s furry or feathered companion?
"""),
    none=L("""
What is the name of {P}'s {q}?
What is {P}'s {q} called?
"""),
    lead=L("""
How are things at home?
Anything new at your place?
"""),
    follow=L("""
Aww, {petname}! Send more pictures please.
{petname} is such a good name.
Haha that is so typical.
"""),
)

F["partner"] = dict(
    sent="pos",
    state=L("""
My {pword} {pname} surprised me with concert tickets last night.
I'm bringing my {pword} {pname} to the barbecue, if that's okay.
{pname}, my {pword}, is away for work all week so the flat is very quiet.
My {pword} {pname} burnt the rice again, we're ordering in.
{pname} says hi! That's my {pword}, I don't think you two have met.
Been with {pname} for two years now. My {pword} is the only reason I remember anything.
My {pword}, {pname}, has started doing crosswords and is now unbearable about it.
Date night with {pname} tonight. My {pword} picked the restaurant so fingers crossed.
My {pword} {pname} and I are arguing about paint colours for the hallway.
{pname}, that's my {pword}, wants to get into hiking. Send help.
Honestly my {pword} {pname} is the better cook in this house.
My {pword} is called {pname}, we met at a friend's birthday party.
{pname} and I had our anniversary dinner yesterday, best {pword} ever, not going to lie.
My {pword} {pname} planned a whole surprise picnic for me, I nearly cried.
I'm so lucky with {pname}. My {pword} drove two hours just to bring me soup.
"""),
    single=L("""
What is the name of {P}'s {pword}?
Who is {P}'s {pword}?
"""),
    para=L("""
Who is {P} in a relationship with?
Who is {P} romantically involved with?
Who is {P}'s significant other?
"""),
    none=L("""
What is the name of {P}'s {pword}?
Who is {P} married to?
"""),
    lead=L("""
How's your love life, by the way?
How is everyone at home?
"""),
    follow=L("""
Aww, {pname} sounds like a keeper.
Say hi to {pname} from me!
Haha, you two are adorable.
"""),
)

F["partnerjob"] = dict(
    sent="neu",
    state=L("""
{pname} just started as {a_prole}, so our schedules are chaos.
{pname} works as {a_prole}, which means lots of weekend shifts.
{pname} got promoted at work, senior {prole} now!
Being {a_prole} means {pname} is always on call.
{pname} is {a_prole}, so dinner conversation gets very technical.
{pname} spent the whole weekend doing {prole} paperwork.
{pname} has been {a_prole} for ten years and still loves it.
{pname} came home exhausted again, {prole} life is no joke.
"""),
)

F["kid"] = dict(
    sent="pos",
    state=L("""
My {kidword} {kname} turns {age} next month and wants a dinosaur party.
{kname}, my {kidword}, is {age} and lost a tooth today, very proud.
Parent life: my {age}-year-old {kidword} {kname} drew on the wall with a marker.
My {age}-year-old {kidword}, {kname}, asked me where clouds come from today.
{kname} is {age} now, my {kidword} is growing up so fast.
My {kidword} {kname} is {age} and already better at maths than me.
Had to leave early, my {kidword} {kname} had a fever. Being {age} is hard apparently.
{kname} just turned {age}! My {kidword} insisted on a pirate cake.
My {kidword} {kname}, who is {age}, wants a phone. Absolutely not.
Bedtime took two hours tonight, {kname} is {age} and has opinions. Kids, right? My {kidword} is a negotiator.
My {kidword} {kname} started a new class this term, not bad for {age}.
At {age}, my {kidword} {kname} is already taller than all the cousins.
{kname} is my {kidword}, {age} going on forty.
My {kidword} {kname} told a whole joke today, at {age}. I'm so proud.
It's school pickup time. {kname} is {age} and my {kidword} hates being the last one collected.
"""),
    single=L("""
What is the name of {P}'s {kidword}?
How old is {P}'s {kidword}?
"""),
    para=L("""
Does {P} have children?
Is {P} a parent?
Does {P} have any little ones?
"""),
    none=L("""
What is the name of {P}'s {kidword}?
How old is {P}'s {kidword}?
"""),
    lead=L("""
How's family life these days?
How are things at home?
"""),
    follow=L("""
Haha {kname} sounds like a character.
Aww, {age} is such a fun age.
Give {kname} a high five from me.
"""),
)

F["kidsport"] = dict(
    sent="pos",
    state=L("""
{kname} made the {sport} team at school!
{kname} has {sport} practice every Saturday morning, so I'm up at seven.
We just bought {kname} all the {sport} gear, it cost a fortune.
{kname} came home from {sport} covered in mud and grinning.
{kname} won a medal at {sport}, I screamed louder than all the other parents.
{kname} wants to do {sport} every single day now.
Sat through a two hour {sport} session watching {kname} today.
"""),
)

F["allergy"] = dict(
    sent="neg",
    state=L("""
Turns out I'm allergic to {allergen}, the doctor confirmed it.
I can't eat that, I'm allergic to {allergen}.
I break out in hives if I go anywhere near {allergen}.
Had a reaction to {allergen} at a restaurant last week, ended up in urgent care.
I always carry an EpiPen because of my {allergen} allergy.
Reminder for the dinner party: no {allergen} for me, I'm allergic.
My throat closes up with {allergen}, so I read every label.
Got my allergy test results back, it's {allergen}. Explains a lot.
I have to ask waiters about {allergen} every single time, it's exhausting.
Apparently I'm allergic to {allergen} now? Developed it out of nowhere at thirty.
Even a trace of {allergen} and my face swells up.
The bakery mixed up my order and there was {allergen} in it. Spent the night on antihistamines.
Since the {allergen} allergy diagnosis I basically cook everything myself.
I'm the person at the table asking if there's {allergen} in the sauce, sorry.
{Allergen} and I are not friends, my body really hates it.
"""),
    single=L("""
What is {P} allergic to?
What allergy does {P} have?
"""),
    para=L("""
Which food must {P} stay away from?
What ingredient makes {P} ill?
What does {P}'s immune system react badly to?
What has {P} got to avoid on menus?
"""),
    none=L("""
What is {P} allergic to?
Does {P} have any food allergies?
"""),
    lead=L("""
Are you coming to the dinner on Friday?
How are you feeling these days?
"""),
    follow=L("""
That's scary, I'll remember for when you come over.
Oh no, that must make eating out so hard.
"""),
)

F["food"] = dict(
    sent="neu",
    state=L("""
Nothing beats a big bowl of {dish}, I could eat it every day.
If I could only eat one thing forever it'd be {dish}.
{Dish} is my absolute favourite, no contest.
I'd walk across town for good {dish}.
My comfort food is {dish}, always has been.
Whenever I'm sad I order {dish}. Works every time.
My all-time favourite meal? {Dish}, hands down.
Honestly {dish} is the best food ever invented.
For my last supper on earth I'd pick {dish}.
I'm obsessed with {dish}, I've tried every place in town that does it.
{Dish} every Friday is my tradition, I'm not changing it.
Nobody makes {dish} like my grandma but I keep trying.
I could live on {dish} alone, seriously.
{Dish} is the one dish I never get tired of.
Ask me my favourite food and the answer is always {dish}.
"""),
    single=L("""
What is {P}'s favourite food?
What dish does {P} love most?
What is {P}'s favourite meal?
"""),
    para=L("""
What would {P} happily have for dinner every night?
Which thing on a menu is {P} most fond of?
What does {P} crave the most?
Which plate would {P} choose above all others?
"""),
    none=L("""
What is {P}'s favourite food?
What dish does {P} love most?
"""),
    lead=L("""
What have you been eating lately?
Have you found any good restaurants?
"""),
    follow=L("""
Okay now I'm hungry.
Haha, respect. {Dish} is a solid choice.
"""),
)

F["hobby"] = dict(
    sent="pos",
    state=L("""
I've been getting into {hobby} on weekends, it's so relaxing.
Signed up for a {hobby} class and I'm already hooked.
My new obsession is {hobby}. Spent four hours on it yesterday.
I took up {hobby} last month, it's the best thing I've done for my head.
Every Sunday morning is {hobby} time now, no exceptions.
{Hobby} has completely taken over my free time.
I joined a {hobby} group that meets on Thursdays.
Spent the afternoon doing {hobby} again, I'm getting better at it.
Did I tell you I do {hobby} now? Started in the spring.
I'm trying {hobby}, the beginners' sessions are so much fun.
Weekends are for {hobby} these days.
I bought all the gear for {hobby}, so now I have to stick with it.
Turns out I really like {hobby}. Who knew?
My stress relief lately has been {hobby}.
Been doing {hobby} with a club down the road, everyone's really friendly.
"""),
    single=L("""
What hobby has {P} taken up?
What new hobby is {P} into?
"""),
    para=L("""
What pastime is {P} passionate about?
What does {P} do to unwind?
How does {P} like to spend leisure hours?
"""),
    none=L("""
What hobby has {P} taken up?
Has {P} picked up any new hobby lately?
"""),
    lead=L("""
What are you doing for fun these days?
Got any new hobbies?
"""),
    follow=L("""
That sounds so fun, I've always wanted to try {hobby}.
Ooh, you'll have to show me sometime.
"""),
)

F["instrument"] = dict(
    sent="pos",
    state=L("""
I'm learning the {instrument}! My fingers hurt so much.
Started {instrument} lessons this month, my teacher is very patient.
Practised the {instrument} for an hour tonight, the neighbours must hate me.
I bought a second-hand {instrument} and I'm teaching myself from videos.
I've played the {instrument} since I was a kid, just picked it back up.
My {instrument} teacher says I'm ready for my first recital.
Finally nailed that tricky bit on the {instrument} I've been stuck on.
Joined a community band, I'm on {instrument}.
Every evening I squeeze in twenty minutes of {instrument} practice.
I'm doing a grade exam on the {instrument} in the spring.
Learning the {instrument} at my age is humbling, honestly.
The {instrument} is way harder than it looks on YouTube.
Guess what I'm doing with my evenings? {Instrument} scales, over and over.
I play {instrument} in a little group with some people from the library.
Dusted off my old {instrument} and it still sounds okay!
"""),
    single=L("""
What instrument is {P} learning?
Which instrument does {P} play?
"""),
    para=L("""
What music skill is {P} working on?
What does {P} make music with?
What is {P} getting good at musically?
"""),
    none=L("""
What instrument does {P} play?
Is {P} learning a musical instrument?
"""),
    lead=L("""
Still doing anything musical?
What have you been up to in the evenings?
"""),
    follow=L("""
Ooh, play me something next time!
Haha, your poor neighbours.
"""),
)

F["trip"] = dict(
    sent="pos",
    state=L("""
We're flying to {place} on {tdate}, I've been counting down for weeks.
Booked it! {Place}, leaving {tdate}.
I'm off to {place} on {tdate} for ten days.
Got the tickets for {place} today, we go on {tdate}.
My holiday is finally sorted: {place}, departing {tdate}.
I'll be in {place} from {tdate}, so no plans that week please.
On {tdate} I'm heading to {place}, first real break in ages.
Taking a week off to visit {place}, leaving on {tdate}.
The {place} trip is on! Flight is {tdate}, early morning of course.
I just booked a trip to {place} for {tdate}, spontaneous I know.
Counting down to {place}, we leave {tdate}.
Vacation plans: {place}, {tdate}. I need it so badly.
I'm going to {place} on {tdate} with my old uni friends.
Time off approved! I'll be exploring {place} starting {tdate}.
Hotel in {place} is booked for {tdate}, now I just need to pack.
"""),
    single=L("""
Where is {P} travelling to?
Where is {P}'s trip to?
Where is {P} going on holiday?
"""),
    para=L("""
Which destination is {P} visiting soon?
Where will {P} be jetting off to?
Where is {P} headed for a getaway?
"""),
    none=L("""
Where is {P} going on holiday?
Where is {P} travelling to next?
"""),
    lead=L("""
Any holidays planned?
Are you taking any time off soon?
"""),
    follow=L("""
{Place} sounds amazing, bring me back something!
So jealous. You deserve a break.
"""),
)

F["purchase"] = dict(
    sent="pos",
    state=L("""
I just bought {item} and I'm weirdly emotional about it.
Treated myself to {item} this week.
Finally ordered {item}, it arrived this morning.
Splurged on {item}, don't tell my bank.
I got {item} in the sale, half price!
New purchase: {item}. Already wondering how I lived without it.
Picked up {item} second-hand from a guy on the marketplace.
Caved and bought {item}. No regrets.
My birthday money went on {item}.
Assembled {item} last night, only one screw left over.
I spent way too much on {item} but it's worth it.
Came home with {item} today, totally unplanned.
After months of thinking about it I bought {item}.
Guess who owns {item} now. Me!
Ordered {item} online and it showed up in two days.
"""),
    single=L("""
What did {P} buy?
What did {P} recently purchase?
"""),
    para=L("""
What is {P}'s latest acquisition?
What new possession is {P} excited about?
What did {P} treat {himself} to lately?
"""),
    lead=L("""
Bought anything nice lately?
Did you end up getting anything in the sales?
"""),
    follow=L("""
Ooh fancy! Let me know if it's any good.
Haha, treat yourself.
"""),
)

F["car"] = dict(
    sent="pos",
    state=L("""
I drive a {car} now, bought it from my uncle.
Got a {car}! It's not new but it runs.
My {car} failed its inspection, so that's my weekend gone.
Picked up my {car} from the dealer today, it still smells new.
The {car} is parked outside, so I can give you a lift anytime.
Finally bought a car: a {colour} {car}.
I've been driving my {car} everywhere since the trains went on strike.
My {car} needs new tyres already, typical.
Got myself a {car}, living the suburban dream.
The {car} I bought last month is great on fuel.
Took the {car} on its first road trip, no breakdowns.
I have a {car} now, parking is a nightmare though.
My {car} is the best thing I own, honestly.
Someone scratched my {car} in the supermarket car park.
Just bought a {colour} {car}, I'm ridiculously proud.
"""),
    update=L("""
I sold the {car} and got a {car2} instead.
Traded in my {car} for a {car2}, much better.
Goodbye {car}, hello {car2}!
The {car} finally died, so I bought a {car2}.
Upgraded from the {car} to a {car2} this week.
I'm driving a {car2} now, the old {car} went to the scrapyard.
Replaced my {car} with a {car2}, fewer repairs hopefully.
Got rid of the {car}. My new ride is a {car2}.
"""),
    single=L("""
What car does {P} drive?
What kind of car does {P} have?
"""),
    para=L("""
What vehicle does {P} own?
What does {P} get around in on the road?
Which motor does {P} have on the driveway?
"""),
    none=L("""
What car does {P} drive?
What kind of car does {P} have?
"""),
    lead=L("""
How are you getting around these days?
Did you ever sort out transport?
"""),
    follow=L("""
Nice! Road trip soon?
Ooh, what colour is it?
"""),
)

F["birthday"] = dict(
    sent="pos",
    state=L("""
My birthday is on {bday}, so save the date!
It's my birthday on {bday}, thinking of doing a small dinner.
Turning a year older on {bday}, don't remind me.
{Bday} is my birthday, I always take the day off.
Every year on {bday} I get a cake from the same bakery for my birthday.
Mark your calendar: {bday}, my birthday drinks.
My birthday's {bday}. I want zero fuss this year.
My mum always calls at 7am on {bday} to sing happy birthday.
Quick heads up, my birthday's on {bday} and you're invited.
I'm celebrating my birthday on {bday} with a picnic if the weather holds.
Ugh, another birthday coming up on {bday}.
Not to be dramatic but {bday} is my birthday and I expect gifts.
{Bday}, that's my birthday. Only a few weeks away!
Planning my birthday already, it's {bday}.
I share my birthday with my grandad, we're both {bday}.
"""),
    single=L("""
When is {P}'s birthday?
What date is {P}'s birthday?
"""),
    para=L("""
On what date was {P} born?
What day does {P} turn a year older?
When does {P} get to blow out candles each year?
"""),
    none=L("""
When is {P}'s birthday?
What date is {P}'s birthday?
"""),
    lead=L("""
When are we celebrating you this year?
Any big dates coming up?
"""),
    follow=L("""
Noted! I'll put it in my calendar.
Ooh, any plans for it?
"""),
)

F["book"] = dict(
    sent="neu",
    state=L("""
I'm reading {title} by {author}, can't put it down.
Halfway through {title} and it's so good.
Currently on {title}, the {author} novel everyone talks about.
Started {title} on the train this week.
My book club picked {title} by {author}, I'm on chapter six.
{Title} by {author} has me staying up way too late.
I borrowed {title} from the library, {author} writes so well.
Just got into {title}, really slow start but I'm hooked now.
Reading {title} before bed every night, it's gorgeous.
I'm deep into {author}'s {title} at the moment.
Can't stop thinking about {title}, I'm nearly done with it.
The book on my nightstand right now is {title} by {author}.
I've been listening to the audiobook of {title} on my walks.
{Title} is my current read, {author} is a genius.
I'm about a hundred pages into {title}.
"""),
    update=L("""
Finished {title}! Now I've started {title2} by {author2}.
Done with {title} finally. Next up is {title2}, already loving it.
I gave up on {title} halfway, switched to {title2} instead.
Moved on from {title} to {title2} by {author2}, very different vibe.
Just started {title2}, after finishing {title} on the plane.
{Title} is done, I'm reading {title2} by {author2} now.
After {title} I needed something lighter, so it's {title2} now.
"""),
    single=L("""
What book is {P} reading?
Which book is {P} reading at the moment?
"""),
    para=L("""
What novel has {P} got {his} nose in?
Which title is {P} working through currently?
What is {P} paging through these days?
"""),
    none=L("""
What book is {P} reading?
Which novel is {P} reading at the moment?
"""),
    lead=L("""
Reading anything good?
What's on your nightstand these days?
"""),
    follow=L("""
Ooh, is it good? I need a new book.
Never heard of it, I'll look it up.
"""),
)

F["gym"] = dict(
    sent="pos",
    state=L("""
I've been going to the gym {freq} times a week, mostly {act}.
New routine: {act}, {freq} times a week, {gtime}.
I'm at the gym {freq} days a week now, {act} {gtime}.
Proud of myself, I've done {act} {freq} times a week for a month straight.
My trainer has me doing {act} {freq} times a week.
{Freq} sessions a week at the gym, {act} mostly. My legs are jelly.
I joined a gym near work and go {freq} times a week for {act}.
The plan is {act} {gtime}, {freq} days a week. So far so good.
Gym update: {freq} visits a week, {act} every time.
I've committed to {act} {freq} times a week, {gtime}, no excuses.
Been hitting the gym {gtime}, {freq} times a week, mainly for {act}.
I do {act} {freq} times a week now, it's become a habit.
{Freq} times a week I drag myself to the gym for {act} {gtime}.
Signed up for a gym membership, going {freq} days a week for {act}.
My week revolves around {act} now, {freq} sessions, always {gtime}.
"""),
    single=L("""
How many times a week does {P} go to the gym?
What does {P} do at the gym?
"""),
    para=L("""
How often does {P} exercise?
How frequently does {P} work out?
What is {P}'s fitness schedule like?
"""),
    none=L("""
How many times a week does {P} go to the gym?
How often does {P} work out?
"""),
    lead=L("""
Are you still exercising?
How's the fitness going?
"""),
    follow=L("""
Wow, I'm impressed. I can barely do once a week.
Look at you! Very disciplined.
"""),
)

F["team"] = dict(
    sent="neu",
    state=L("""
I'm a huge {team} fan, always have been.
I've supported {team} since I was six.
Got season tickets for {team} this year!
{Team} lost again, I don't know why I put myself through this.
My whole weekend mood depends on how {team} play.
Wearing my {team} shirt to the pub tonight for the match.
I'd never miss a {team} game, it's basically my religion.
Being a {team} supporter is pure suffering some seasons.
I bought a new {team} scarf, the old one was falling apart.
My dad raised me as a {team} fan and I never recovered.
{Team} are my team, win or lose.
I cried when {team} won the cup last year, not even joking.
Can't talk Saturday afternoon, {team} are playing and I have rituals.
I follow {team} religiously, every single match.
Watching {team} with my mates tonight, wish us luck.
"""),
    single=L("""
Which team does {P} support?
What team is {P} a fan of?
"""),
    para=L("""
Who does {P} root for?
Which club does {P} cheer on?
Which side has {P}'s loyalty in sport?
"""),
    none=L("""
Which team does {P} support?
What sports team is {P} a fan of?
"""),
    lead=L("""
Did you watch the match at the weekend?
Are you into sport at all?
"""),
    follow=L("""
Haha, my condolences.
Oh, big game this weekend then?
"""),
)

F["sibling"] = dict(
    sent="neu",
    state=L("""
My {sibword} {sname} is coming to stay for the weekend.
{sname}, my little {sibword}, just called me for advice, which never happens.
My older {sibword}, {sname}, is the reason I got into cooking.
Had lunch with my {sibword} {sname} today, we hadn't caught up in months.
{sname} is my {sibword}, we're only a year apart.
My {sibword} {sname} borrowed my good jacket and returned it with a stain.
Family group chat is chaos, my {sibword} {sname} started it.
I'm helping my {sibword} {sname} plan a surprise party.
My {sibword} {sname} and I finally made up after that argument.
My {sibword} {sname} got engaged! I'm going to be in the wedding.
{sname}, my twin {sibword}, keeps stealing my jokes.
Spent the evening on the phone with my {sibword} {sname}, two hours gone.
My {sibword} {sname} is the smart one in our family, apparently.
My big {sibword} {sname} just had a baby, so there's a tiny new person in the family.
Went shopping with my {sibword} {sname}, who bought nothing, as usual.
"""),
    single=L("""
What is the name of {P}'s {sibword}?
Who is {P}'s {sibword}?
"""),
    para=L("""
Does {P} have any siblings?
Who grew up in the same family as {P}?
"""),
    none=L("""
What is the name of {P}'s {sibword}?
Does {P} have a {sibword}?
"""),
    lead=L("""
How's your family doing?
Seen any relatives lately?
"""),
    follow=L("""
Haha, {sname} sounds fun.
Aw, say hi to {sname}.
"""),
)

F["sibcity"] = dict(
    sent="neu",
    state=L("""
{sname} just moved to {scity} for a job, so I'll be visiting a lot.
{sname} lives out in {scity} now, so I hardly ever see them.
I'm going to {scity} to see {sname} next month, it's been ages.
{sname} bought a flat in {scity}, very grown-up.
{sname} keeps telling me to move to {scity} too.
Visiting {sname} in {scity} was the highlight of my month.
"""),
)

F["health"] = dict(
    sent="neg",
    state=L("""
I've been off work with {condition}, the doctor says two more weeks.
Sorry I've been quiet, I'm recovering from {condition}.
Went to the doctor today, it's {condition}. Great.
{Condition} has knocked me flat this week.
Still dealing with {condition}, it's slow going.
I ended up in A and E on Friday, turned out to be {condition}.
The GP finally diagnosed me with {condition}.
Can't do much this week, {condition} has me stuck on the sofa.
I'm on medication for {condition} now, fingers crossed it helps.
Had {condition} all last week, only just feeling human again.
Turns out the pain was {condition}, I need to take it easy.
{Condition}, of all things. I'm on rest for a fortnight.
Been dealing with {condition} since the weekend, it's miserable.
Doctor's orders because of {condition}: no lifting, no running.
Small update: I got {condition} and had to cancel everything.
"""),
    single=L("""
What health problem did {P} have?
What was {P} diagnosed with?
What was {P} recovering from?
"""),
    para=L("""
Why was {P} unwell?
What ailment did {P} suffer?
What medical issue has {P} struggled with?
"""),
    none=L("""
What health problem did {P} have?
What illness was {P} recovering from?
"""),
    lead=L("""
You've been quiet, everything okay?
How are you feeling?
"""),
    follow=L("""
Oh no, get well soon!
Take it easy, seriously. Do you need anything?
"""),
)

F["language"] = dict(
    sent="pos",
    state=L("""
I'm taking {language} classes on Tuesday evenings.
Started learning {language}, the grammar is breaking my brain.
My {language} teacher made me do a presentation, terrifying.
I've been practising {language} with an app every day for three months.
Signed up for an evening course in {language}.
Trying to learn {language} before the summer, wish me luck.
I can now order coffee in {language}! Small wins.
{Language} lessons are the highlight of my week honestly.
I found a {language} tutor online, we do video calls twice a week.
Learning {language} is way harder than I expected.
I'm doing a {language} exchange with someone from the library.
My {language} is slowly getting better, I understood a whole podcast episode.
Enrolled in a {language} course at the community college.
Every morning I do twenty minutes of {language} flashcards.
Decided to finally learn {language} properly, bought the textbook and everything.
"""),
    single=L("""
What language is {P} learning?
Which language class is {P} taking?
"""),
    para=L("""
Which tongue is {P} studying?
What is {P} trying to become fluent in?
What foreign speech is {P} picking up?
"""),
    none=L("""
What language is {P} learning?
Which language is {P} studying?
"""),
    lead=L("""
Learning anything new?
What are you doing on weeknights lately?
"""),
    follow=L("""
Ooh, say something in {language}!
That's so cool, I gave up on languages years ago.
"""),
)

F["plan"] = dict(
    sent="pos",
    state=L("""
Next weekend I'm going to {plan}, finally.
Plans for next weekend: {plan_ing}. Can't wait.
I've decided that next weekend I'll {plan}.
Next Saturday I'm going to {plan}, it's been on my list forever.
My plan for next weekend is to {plan}.
Don't book me next weekend, I'm going to {plan}.
I promised myself I'd {plan} next weekend.
Next weekend's sorted, I'm going to {plan}.
Thinking I'll {plan} next weekend if the weather's okay.
Nothing fancy next weekend, just going to {plan}.
I'm going to {plan} next weekend with a couple of friends.
Next weekend? Going to {plan}. Want to come?
I finally committed, next weekend I'll {plan}.
The weekend after this one I'm going to {plan}.
Next weekend is blocked off, I want to {plan}.
"""),
    lead=L("""
What are you up to next weekend?
Any plans coming up?
"""),
    follow=L("""
Love that, send pictures!
Ooh, have fun. I'm jealous.
"""),
)

F["saving"] = dict(
    sent="neu",
    state=L("""
I'm saving up for {goal}, so no fancy dinners for a while.
Every spare penny is going toward {goal}.
Opened a separate account just for {goal}.
Cutting back on takeaways, I want {goal} by next year.
I've got about a third of what I need for {goal}.
The {goal_bare} fund is growing slowly but surely.
I set up a monthly transfer for {goal}.
No holidays this year, I'm putting everything into {goal}.
Budget spreadsheet says I can afford {goal} by the autumn.
I've been squirrelling cash away for {goal}.
Skipping the concert, sorry, I'm saving for {goal}.
My big financial goal this year is {goal}.
Picked up extra shifts to pay for {goal}.
Selling old stuff online to fund {goal}.
I'm being so strict with spending because of {goal}.
"""),
    single=L("""
What is {P} saving up for?
What is {P}'s savings goal?
"""),
    para=L("""
What is {P} putting money aside to afford?
What big expense is {P} planning toward?
What is {P} economising for?
"""),
    none=L("""
What is {P} saving up for?
What is {P}'s savings goal?
"""),
    lead=L("""
How are the finances looking?
Are you coming to the concert?
"""),
    follow=L("""
That's really smart, good for you.
Oh nice, that's a great goal.
"""),
)

F["commute"] = dict(
    sent="neu",
    state=L("""
I {mverb} to work now, about {mins} minutes each way.
My commute is {mins} minutes on the {mnoun}, I get a lot of reading done.
Been taking the {mnoun} to the office every day, {mins} minutes door to door.
I've started to {mverb} into work, it's only {mins} minutes.
The {mnoun} to work was packed again this morning.
Getting to work by {mnoun} is so much better than sitting in traffic.
I {mverb} in every morning, rain or shine.
Switched to the {mnoun} for my commute, saves me a fortune.
My daily commute is by {mnoun} now.
Every morning it's {mins} minutes on the {mnoun} to get to work.
I've been going to work by {mnoun}, it's very calming.
Work is {mins} minutes away by {mnoun}, so not bad.
The {mnoun} ride to the office is the only quiet part of my day.
I {mverb} to the office, which counts as exercise, right?
Commuting by {mnoun} these days, I even know the regulars by name.
"""),
    single=L("""
How does {P} commute to work?
How does {P} get to work?
"""),
    para=L("""
What transport does {P} use for the daily journey to {his} job?
By what means does {P} reach {his} workplace?
How does {P} travel in each weekday?
"""),
    none=L("""
How does {P} get to work?
How does {P} commute?
"""),
    lead=L("""
How's the commute these days?
How long does it take you to get in?
"""),
    follow=L("""
Honestly that sounds better than my commute.
Ha, I could never.
"""),
)

F["music"] = dict(
    sent="neu",
    state=L("""
I've been listening to {artist} non-stop.
{Artist} is all I play in the kitchen these days.
Got tickets to see {artist} in the autumn!
My favourite band right now is {artist}.
If you haven't heard {artist}, fix that immediately.
{Artist}'s new album has been on repeat all week.
I went to a {artist} gig last night and my ears are still ringing.
I'm obsessed with {artist}, I know every lyric.
My app told me I listened to {artist} for 90 hours this year. Oops.
Nothing gets me through a workday like {artist}.
I think {artist} might be the best band of the decade, fight me.
Can't stop humming that {artist} song.
My top artist this year was {artist}, unsurprisingly.
Bought the {artist} album on vinyl, no regrets.
{Artist} got me through a rough month, honestly.
"""),
    single=L("""
What band is {P} listening to?
Which band is {P}'s favourite?
"""),
    para=L("""
Whose songs does {P} love right now?
What group does {P} keep playing?
Which musicians is {P} a big admirer of?
"""),
    none=L("""
Which band is {P}'s favourite?
What band is {P} listening to?
"""),
    lead=L("""
What are you listening to these days?
Heard any good music lately?
"""),
    follow=L("""
Never heard of them, send me a song!
Oh I love them too.
"""),
)

PRIMARY_TYPES = [k for k in F if k not in ("jobcity", "partnerjob", "kidsport", "sibcity")]
OPTIONAL_TYPES = [k for k in PRIMARY_TYPES if k not in ("home", "job")]

# ---------------------------------------------------------------------------
# Filler. Distractors talk about the same topics as the facts (third parties,
# the news, questions) but never state a fact about either speaker.
# ---------------------------------------------------------------------------

DISTRACTORS = L("""
My neighbour's {sp} got out again and ended up in our garden.
{tp} just moved to {city}, keeps sending me photos of the view.
Have you ever been to {city}? Everyone says the food there is great.
{tp} got a job as {a_role} at some startup, seems happy so far.
Rent prices in {city} are insane right now, {tp} saw a tiny studio for two grand.
Do you ever think about changing careers completely?
I saw a video of someone making {dish} in ten minutes, looked fake.
The {dish} place near the station closed, which is a tragedy.
Half of {tp}'s office is off with {condition} this week.
{tp}'s kid is learning the {instrument} and the whole building can hear it.
Flights to {place} are so expensive right now, it's ridiculous.
{tp} went to {place} last year and hasn't stopped talking about it.
Have you read anything by {author}? People keep recommending {title}.
Someone dented {tp}'s {car} in a car park and just drove off.
Did you catch the {team} game? What a mess.
The gym by the station is always packed in January.
Groceries are so expensive lately, the prices at the till are wild.
{tp} is allergic to {allergen}, so the office potluck was a whole thing.
{tp} is trying to learn {language} with an app, on a 300-day streak.
Apparently {artist} are touring again next year.
There's a {hobby} studio opening on {street}, looks fancy.
{tp} adopted a {sp} called {petname}, it's ridiculously cute.
Did you see the news about the storm in {city}?
{tp} bought {item} and has used it exactly once.
Is it just me or is everyone getting into {hobby} lately?
I walked past a {sp} on {street} that looked exactly like a tiny bear.
{tp} says {employer} is hiring, in case you know anyone.
There was a documentary about {place} on last night, gorgeous scenery.
A guy at the bakery swears {dish} is better the next day.
{tp} broke a wrist skateboarding, at forty-two. Legend.
The pharmacy was out of hay fever tablets again.
Someone at the bus stop was playing the {instrument}, badly.
A friend of {tp}'s just got engaged, so the group chat is all wedding talk.
Property in {city} is apparently a good investment right now, according to {tp}.
{tp} started at {employer} and already hates the coffee machine.
{tp} keeps trying to get everyone to watch {team} at the pub.
The library had a sale and {title} was going for one pound.
{tp} is reading {title} for book club and says it's terrible.
They're building new flats on {street}, it's been noisy for months.
{tp}'s {sp} has its own Instagram now, with more followers than most people.
Somebody left a {instrument} on the train, how do you even forget that?
A guy in {tp}'s team had {condition} and was off for a month.
Petrol prices are a joke at the moment.
Bank holiday traffic was unreal, {tp} was stuck for three hours.
{tp}'s band covers {artist} songs at weddings.
{tp} just got back from {place}, tanned and insufferable.
Do you have any good podcast recommendations? I've run out.
I read an article saying {hobby} is good for your heart.
{tp} bought a {car} and named it, which is hilarious.
Did you ever try {dish}? {tp} makes an amazing one.
The vet near {tp}'s place charges a fortune.
{tp} is saving up for {goal}, very disciplined about it.
Every billboard in town is advertising {place} holidays.
Remember when tickets for {artist} sold out in two minutes?
{tp} wants to {plan} next weekend, apparently.
Someone in the group chat is selling {item}, if you're interested.
The bakery on {street} does the best cinnamon buns.
{tp} got a {sp} and hasn't slept since.
The new season of that baking show is out, have you seen it?
{tp} asked if anyone knows a good {role}, do you?
There's a {language} film at the cinema this week with subtitles.
I heard {team} signed a new coach.
Did you see that article about people quitting their jobs to live in {place}?
{tp} finished a half marathon with {condition}, somehow.
Landlords in {city} are the worst, according to {tp}.
A colleague of {tp}'s brought {dish} to the team lunch and it vanished in seconds.
{tp} took up the {instrument} at sixty, which is amazing.
{tp} has moved house four times in two years.
Half of {tp}'s friends are learning {language} for some reason.
My feed is full of people doing {hobby}.
{tp}'s {kidrel} is obsessed with dinosaurs right now.
Someone on the next street has a {car} covered in stickers.
The weather's been so weird, sunny in the morning and hail by lunch.
Did you hear {employer} is laying people off? {tp} is worried.
{tp} swears by {dish} as a hangover cure.
Apparently {city} has the best coffee in the country now.
There's a petition to turn {street} into a pedestrian zone.
{tp} and {tp2} are finally moving in together.
{tp} is doing a {language} exam next month and is panicking.
The {team} fans were singing outside the station all night.
Do you think it's worth learning to cook properly? {tp} thinks so.
{tp} says a {sp} is basically a toddler that never grows up.
Someone stole {tp}'s bike from right outside the library.
Have you ever tried {hobby}? Looks hard.
{tp} is looking for a flat in {city}, it's grim out there.
The {artist} documentary is supposed to be really good.
{tp} went to a {dish} festival and came back with a food coma.
""")

SMALLTALK = L("""
How's your week going?
Any plans for the weekend?
I'm so tired today, slept terribly.
It's been raining nonstop here.
Did you watch anything good lately?
What have you been up to?
Work has been a lot this week.
I've had way too much coffee today.
Do you have time for a call later?
The days are getting shorter, I hate it.
I keep forgetting to reply to messages, sorry.
What did you have for dinner?
Ugh, Mondays.
I finally cleaned the fridge, big day.
Did you get my voice note?
My phone is about to die, so quick message.
I'm procrastinating so hard right now.
It's so hot today I can't think.
Do you remember the name of that cafe we went to?
I saw a double rainbow on the way home.
I'm trying to drink more water, it's going badly.
Have you seen the new series everyone is talking about?
Can you believe it's already {month}?
I just spent twenty minutes looking for my keys. They were in my hand.
Random question, do you prefer mornings or evenings?
I need to stop buying plants, they keep dying.
Is it weird that I like doing laundry?
Tell me something good, I need it today.
What's new with you?
I watched a documentary about octopuses and now I have feelings.
The internet was down all morning, I nearly lost my mind.
How did the rest of your week go?
I'm finally caught up on sleep, feels amazing.
Do you ever just stare at the fridge hoping food appears?
My inbox is a disaster right now.
What's the best thing that happened to you this week?
Been a weird week, honestly.
I've been meaning to message you for ages.
Are you free for a coffee sometime?
I tried to be productive today and failed spectacularly.
It's so windy here, my umbrella gave up.
I started a puzzle and now it's taken over the table.
Have you tried that new ice cream place?
I spent the whole morning on hold with the bank.
Do you ever reread old messages and cringe?
Someone's car alarm has been going off for an hour.
I made soup and it was actually good. Shocked.
Do you think it's too early for Christmas music?
I watched three episodes of something and can't remember the name.
I need new headphones, these ones crackle.
Have you been sleeping okay?
I accidentally replied-all to a work email today. Mortifying.
The sunset tonight was unreal.
Sorry I went quiet yesterday, it was a long day.
I'm trying a no-phone evening. I'm texting you, so it's going badly.
How's everything on your side?
Why is every week so long?
I found a tenner in an old coat, best day ever.
Have you noticed everyone's posting the same meme today?
""")

ANSWERS = L("""
Not much, honestly, just the usual.
Pretty good, can't complain.
Busy but fine!
Haven't decided yet, maybe something lazy.
Hmm, let me think about it.
Yeah, sure, maybe around eight?
No idea, I'm terrible with names.
Nothing exciting, I'll probably just rest.
Ha, same as always.
Honestly? Mostly sleeping.
It's been a bit of a blur, to be honest.
Not yet, it's on my list though.
Oh, a few things, I'll tell you later.
Same here, it's been one of those weeks.
I'm okay! Just tired.
Good question, I have no idea.
Yes! Loved it.
Not really, been too busy.
Ha, definitely evenings.
Maybe next week? This one is packed.
Ugh, don't ask.
A bit chaotic but okay.
Can't complain, really.
Not as much as I'd like!
Hmm, nothing comes to mind.
I'm good, just a bit tired.
Ha, no, not yet.
Probably, yeah.
All quiet on my end.
Let me check and get back to you.
Oh, loads, but nothing interesting.
Honestly it was fine, nothing special.
Same old, same old.
Better now that it's the weekend.
Not really, I've been hibernating.
""")

REACT = {
    "pos": L("""
Oh congrats!!
That's so exciting!
Love that for you.
Yay, amazing news!
Wait, really? That's great!
Ahh, I'm so happy for you.
No way! That's brilliant.
Ooh, fancy.
That's awesome, honestly.
Nice one!
Oh wow, big news.
Haha, that's the dream.
Good for you, seriously.
That sounds lovely.
Oh, how fun!
Whoa, look at you go.
That's the best news I've heard all week.
Yesss. Finally!
Okay, that's really cool.
Haha I love this.
Stop, that's amazing.
Oh my god, finally!
Eee, this is so good.
That is very you, I love it.
Okay, I'm officially jealous.
Amazing! You kept that quiet.
Hold on, since when?!
Ha, brilliant.
Oh that's lovely to hear.
Wow, good on you.
"""),
    "neg": L("""
Oh no, that sounds rough.
Ugh, I'm so sorry.
That's awful, are you okay?
Oh man, that's the worst.
Yikes. Sending hugs.
Ouch, poor you.
That sounds miserable, I'm sorry.
Oh no! Take care of yourself.
Ugh, what bad luck.
That's so stressful.
Oh dear. Let me know if you need anything.
Noooo. That's horrible.
That sounds exhausting.
Aw, that's rubbish.
Oof. Hang in there.
Oh no. That's the last thing you needed.
Ugh, poor thing.
That's really not fair.
Oh man, I'm sorry you're dealing with that.
Rough. Do you want me to bring anything round?
Yikes, that sounds painful.
Oh god. How are you holding up?
"""),
    "neu": L("""
Haha no way.
Oh interesting.
Ha, fair enough.
Oh cool.
Really? I didn't know that.
Haha, classic.
Huh, makes sense.
Oh nice.
Ha, I can see that.
Wait, seriously?
Haha, of course.
Oh, that's funny.
Noted!
Hmm, I'll keep that in mind.
Fair!
Ha, I believe it.
Oh really?
Haha, love it.
Lol, same energy as always.
Interesting, tell me more.
Ha, that tracks.
Oh, I didn't see that coming.
Makes total sense actually.
Huh. Okay!
Ha, you would.
Oh fun.
Hm, fair point.
Ha, good to know.
Okay, I respect that.
Oh nice, I like that.
"""),
}
REPLIES = L("""
Thanks! Still getting used to it.
Haha yeah, it's been a lot.
I'll tell you all about it soon.
Right? I'm still processing.
Haha, thank you.
Yeah, it's been a week.
I know, I can't believe it either.
Ha, I'll keep you posted.
Thanks, that means a lot.
Yeah, we'll see how it goes.
Haha, exactly.
It's been a whole thing, honestly.
Thank you! I'm pretty pleased.
Ha, yeah, it's very me.
Yep. Life comes at you fast.
I'll send you photos later.
Hah, we'll see if it lasts.
So far so good, touch wood.
Right?! I'm still a bit stunned.
Thanks, you're sweet.
Honestly it's been good for me.
Mostly good, a few hiccups.
Haha, I knew you'd say that.
Yeah, fingers crossed.
It's early days, but yeah.
""")
QBACK = L("""
How's that going so far?
What made you decide that?
Wait, how did that happen?
Since when?
Are you happy about it?
Is that a good thing or a bad thing?
How do you feel about it?
Tell me everything!
When did this happen?
Was that planned or spontaneous?
Okay but how is it really?
Why didn't you tell me sooner?
""")
GREET = L("""
Hey {other}! Long time no chat.
Hi! How was your week?
Hey you! Got a minute?
Morning {other}! How's it going?
Hiya, how are things?
Heyyy, I have news.
Hello! Finally free to text.
{other}! It's been forever.
Hey, hope your day's going okay.
Evening! How are you doing?
Hi {other}, sorry for the radio silence.
Yo! What's new?
Hey hey. Quick catch-up?
Good morning! Coffee in hand, ready to chat.
Hi there, stranger!
Hey {other}, you around?
Happy Friday! How are you?
Hello hello. How's life?
Hey! Just saw your message.
Hi! I was just thinking about you.
""")
GREET_BACK = L("""
Hey! Good, thanks, you?
Hi {other}! All good here.
Yes! Perfect timing, I'm on a break.
Heyy. Surviving, how about you?
Ha, I know, it's been ages!
Doing alright! What's up?
Hi! Tired but happy. You?
Oh hey! Always got time for you.
Not bad at all. How are you doing?
Hey {other}! I was about to text you.
All good, just got home.
Hello! Tell me everything.
Hi! Ooh, news? Spill.
Good morning! I'm on my second coffee.
Heyyy, yes I'm here.
Pretty good! Busy week though.
Hi hi! How are things with you?
I'm here! What's going on?
""")
CLOSE = L("""
Okay, I have to run. Talk soon!
Gotta go, dinner's ready. Catch up later?
Right, back to work for me. Bye!
I'm falling asleep, night night!
Let's talk again soon, okay?
My train's here, speak later!
Anyway, I'll let you go. Take care!
Okay that's enough procrastinating for me. Bye!
Got to dash, love chatting with you.
Talk next week? Same time?
Okay, signing off. Have a good one!
Alright, I'm off. Miss you!
I need to go make dinner. Chat soon!
Sorry, meeting in five. Later!
Off to bed. Thanks for the chat!
""")
CLOSE_BACK = L("""
Bye! Talk soon.
Take care, {other}!
Night! Sleep well.
Sounds good, chat later.
Yes, definitely. Bye!
Have fun, speak soon!
Later! Good luck with everything.
Bye bye!
Okay, catch you later.
See ya!
Good night!
Byeee.
""")
BACKCHANNEL = L("""
Oh, before I forget...
Haha okay.
Wait, one sec.
Anyway!
Right, right.
Speaking of which...
Okay, so.
Ha, yeah.
Hmm.
Oh also!
Lol okay.
Anyway, enough about that.
""")

# ---------------------------------------------------------------------------
# Helpers.
# ---------------------------------------------------------------------------

STOP = set("""
a an the and or but if of to in on at by for with from up down out over under
is are was were be been being am do does did doing done have has had having get got
i me my mine you your yours he him his she her hers it its we us our they them their
what which who whom whose when where why how whether this that these those there here
not no yes so too very just than then now also any some all each every
can could would should will shall may might must
about into onto after before while as because again still already ever
s t d ll ve re m
""".split())


def stem(w):
    for suf in ("ing", "ed", "es", "s"):
        if len(w) > len(suf) + 3 and w.endswith(suf):
            return w[: -len(suf)]
    return w


def content_words(text, drop=()):
    toks = re.findall(r"[a-z0-9]+", text.lower().replace("'s", ""))
    dropl = {d.lower() for d in drop}
    return {stem(t) for t in toks if t not in STOP and t not in dropl}


def cap(s):
    return s[:1].upper() + s[1:]


def with_article(x):
    if x.startswith(("HR", "honest")):
        return "an " + x
    if x.startswith(("UX", "uni", "Eu")):
        return "a " + x
    return ("an " if x[0].lower() in "aeiou" else "a ") + x


def ordinal(n):
    if 10 <= n % 100 <= 20:
        suf = "th"
    else:
        suf = {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return "%d%s" % (n, suf)


def nice_date(d):
    return "%s %d, %d" % (MONTHS[d.month - 1], d.day, d.year)


def gerund(phrase):
    verb, _, rest = phrase.partition(" ")
    special = {"run": "running", "see": "seeing", "do": "doing", "try": "trying", "go": "going"}
    if verb in special:
        g = special[verb]
    elif verb.endswith("e") and not verb.endswith("ee"):
        g = verb[:-1] + "ing"
    else:
        g = verb + "ing"
    return (g + " " + rest).strip()


def pronouns(gender):
    if gender == "m":
        return dict(he="he", his="his", him="him", himself="himself")
    return dict(he="she", his="her", him="her", himself="herself")


class Conversation:
    def __init__(self, idx, rng, a, b):
        self.cid = "c%02d" % idx
        self.rng = rng
        self.people = [a, b]  # (name, gender)
        self.taken = set(n for n, _ in (a, b))
        self.facts = {a[0]: {}, b[0]: {}}  # person -> type -> slots
        self.items = []  # statements to place
        self.key2turn = {}
        self.key2session = {}

    # -- value selection ---------------------------------------------------
    def pick(self, pool):
        choices = [v for v in pool if v not in self.taken]
        v = self.rng.choice(choices)
        self.taken.add(v)
        return v

    def fresh(self, pool):
        return self.rng.choice([v for v in pool if v not in self.taken])

    def person_name(self, gender):
        return self.pick(OTHERS_M if gender == "m" else OTHERS_F)

    def street(self):
        first = self.pick(STREET_A)
        return "%s %s" % (first, self.rng.choice(STREET_B))

    def employer(self):
        return "%s %s" % (self.pick(EMP_A), self.rng.choice(EMP_B))

    def title(self):
        while True:
            t = "The %s %s" % (self.rng.choice(BOOK_A), self.rng.choice(BOOK_B))
            if t not in self.taken:
                self.taken.add(t)
                return t

    def author(self):
        g = self.rng.choice("mf")
        return "%s %s" % (self.person_name(g), self.pick(SURNAMES))

    def slots_for(self, typ, gender):
        r = self.rng
        s = {}
        if typ == "home":
            s.update(city=self.pick(CITIES), street=self.street(), num=str(r.randint(2, 140)))
        elif typ == "job":
            s.update(role=self.pick(ROLES), employer=self.employer())
            s["a_role"] = with_article(s["role"])
        elif typ == "pet":
            q, variants = r.choice([x for x in SPECIES if x[0] not in self.taken])
            self.taken.add(q)
            s.update(q=q, sp=r.choice(variants), petname=self.pick(PETNAMES))
        elif typ == "partner":
            pg = r.choice("mf")
            words = {"m": ["husband", "boyfriend", "partner"], "f": ["wife", "girlfriend", "partner"]}[pg]
            s.update(pword=r.choice(words), pname=self.person_name(pg))
        elif typ == "kid":
            kg = r.choice("mf")
            s.update(kidword="son" if kg == "m" else "daughter", kname=self.person_name(kg),
                     age=str(r.randint(3, 12)))
        elif typ == "allergy":
            s.update(allergen=self.pick(ALLERGENS))
        elif typ == "food":
            s.update(dish=self.pick(DISHES))
        elif typ == "hobby":
            s.update(hobby=self.pick(HOBBIES))
        elif typ == "instrument":
            s.update(instrument=self.pick(INSTRUMENTS))
        elif typ == "trip":
            s.update(place=self.pick(PLACES))  # date filled once the session is known
        elif typ == "purchase":
            s.update(item=self.pick(ITEMS))
        elif typ == "car":
            s.update(car=self.pick(CARS), colour=r.choice(COLOURS))
        elif typ == "birthday":
            m, d = r.randint(1, 12), r.randint(1, 28)
            fmt = r.choice(["%(M)s %(d)d", "the %(o)s of %(M)s", "%(M)s %(o)s", "%(d)d %(M)s"])
            s.update(bday=fmt % dict(M=MONTHS[m - 1], d=d, o=ordinal(d)),
                     bday_iso="--%02d-%02d" % (m, d))
        elif typ == "book":
            s.update(title=self.title(), author=self.author())
        elif typ == "gym":
            s.update(freq=r.choice(FREQS), act=r.choice(GYM_ACTS), gtime=r.choice(GYM_TIMES))
        elif typ == "team":
            s.update(team=self.pick(TEAMS))
        elif typ == "sibling":
            sg = r.choice("mf")
            s.update(sibword="brother" if sg == "m" else "sister", sname=self.person_name(sg))
        elif typ == "health":
            s.update(condition=self.pick(CONDITIONS))
        elif typ == "language":
            s.update(language=self.pick(LANGUAGES))
        elif typ == "plan":
            p = self.pick(PLANS)
            s.update(plan=p, plan_ing=gerund(p))
        elif typ == "saving":
            g = self.pick(GOALS)
            bare = re.sub(r"^(a|an|my) ", "", g)
            s.update(goal=g, goal_bare=bare)
        elif typ == "commute":
            mverb, mnoun = r.choice(MODES)
            s.update(mverb=mverb, mnoun=mnoun, mins=str(r.choice([10, 15, 20, 25, 30, 35, 40, 45, 50])))
        elif typ == "music":
            s.update(artist=self.pick(ARTISTS))
        else:
            raise KeyError(typ)
        return s

    def fmt(self, template, slots):
        full = dict(slots)
        for k, v in list(slots.items()):
            if isinstance(v, str):
                full[cap(k)] = cap(v)
        return template.format(**full)

    def add_item(self, key, speaker, typ, template_list, slots, session, rank, sent=None):
        text = self.fmt(self.rng.choice(template_list), slots)
        self.items.append(dict(key=key, speaker=speaker, topic=typ, text=text, session=session,
                               rank=rank, sent=sent or F[typ]["sent"], slots=slots))

    # -- planning ----------------------------------------------------------
    def plan(self):
        r = self.rng
        n = r.randint(4, 7)
        self.n_sessions = n
        gaps = [r.randint(14, 75) for _ in range(n - 1)]
        start = dt.date(2025, 1, 6) + dt.timedelta(days=r.randint(0, 340))
        latest = dt.date(2026, 12, 15) - dt.timedelta(days=sum(gaps))
        start = min(start, latest)
        dates = [start]
        for g in gaps:
            dates.append(dates[-1] + dt.timedelta(days=g))
        self.dates = dates

        names = [p[0] for p in self.people]
        chosen = {}
        for name, gender in self.people:
            k = r.randint(9, 11)
            chosen[name] = ["home", "job"] + r.sample(OPTIONAL_TYPES, k)
        # make sure each conversation has a trip or a plan (temporal material)
        if not any(t in chosen[nm] for nm in names for t in ("trip", "plan")):
            chosen[names[0]].append("plan")
        self.types = chosen

        # updates (need a later session)
        upd = {nm: set() for nm in names}
        home_upd = r.choice(names)
        upd[home_upd].add("home")
        for nm in names:
            if nm != home_upd and r.random() < 0.35:
                upd[nm].add("home")
            if r.random() < 0.5:
                upd[nm].add("job")
            for t in ("car", "book"):
                if t in chosen[nm] and r.random() < 0.55:
                    upd[nm].add(t)
        self.upd = upd

        # compounds: second statements that complete a fact
        comp = {nm: [] for nm in names}
        for nm in names:
            ts = chosen[nm]
            if r.random() < 0.55:
                comp[nm].append("jobcity")
            if "pet" in ts and r.random() < 0.6:
                comp[nm].append("pet2")
            if "partner" in ts and r.random() < 0.75:
                comp[nm].append("partnerjob")
            if "sibling" in ts and r.random() < 0.8:
                comp[nm].append("sibcity")
            if "kid" in ts and r.random() < 0.75:
                comp[nm].append("kidsport")
        total = sum(len(v) for v in comp.values())
        for nm in names:
            if total >= 3:
                break
            if "jobcity" not in comp[nm]:
                comp[nm].append("jobcity")
                total += 1
        if total < 3:
            # both already have jobcity: give someone a second pet
            nm = names[0]
            if "pet" not in chosen[nm]:
                chosen[nm].append("pet")
            if "pet2" not in comp[nm]:
                comp[nm].append("pet2")
        self.comp = comp

        # slot values
        for name, gender in self.people:
            for t in chosen[name]:
                s = self.slots_for(t, gender)
                if t in upd[name]:
                    if t == "home":
                        s.update(city2=self.pick(CITIES), street2=self.street(), num2=str(r.randint(2, 140)))
                    elif t == "job":
                        s.update(role2=self.pick(ROLES), employer2=self.employer())
                        s["a_role2"] = with_article(s["role2"])
                    elif t == "car":
                        s.update(car2=self.pick(CARS))
                    elif t == "book":
                        s.update(title2=self.title(), author2=self.author())
                self.facts[name][t] = s
            for c in comp[name]:
                if c == "jobcity":
                    js = self.facts[name]["job"]
                    js["jobcity"] = self.pick(CITIES)
                elif c == "pet2":
                    self.facts[name]["pet2"] = self.slots_for("pet", gender)
                elif c == "partnerjob":
                    ps = self.facts[name]["partner"]
                    ps["prole"] = self.pick(ROLES)
                    ps["a_prole"] = with_article(ps["prole"])
                elif c == "sibcity":
                    self.facts[name]["sibling"]["scity"] = self.pick(CITIES)
                elif c == "kidsport":
                    self.facts[name]["kid"]["sport"] = self.pick(KID_SPORTS)

        # session assignment, retried until no session is overloaded
        for _attempt in range(500):
            sched = []  # (key, person, kind, session, rank)
            for nm in names:
                for t in chosen[nm]:
                    if t in upd[nm]:
                        s0 = r.randint(0, n - 2)
                        s1 = r.randint(s0 + 1, n - 1)
                        sched.append(("%s:%s" % (nm, t), nm, t, s0, 0))
                        sched.append(("%s:%s:upd" % (nm, t), nm, t + ":upd", s1, 1))
                    else:
                        sched.append(("%s:%s" % (nm, t), nm, t, r.randint(0, n - 1), 0))
                for c in comp[nm]:
                    if c == "pet2":
                        sched.append(("%s:pet2" % nm, nm, "pet2", r.randint(0, n - 1), 0))
                        continue
                    base_t = {"jobcity": "job", "partnerjob": "partner", "sibcity": "sibling", "kidsport": "kid"}[c]
                    base = [x for x in sched if x[1] == nm and x[2] in (base_t, base_t + ":upd")]
                    bs = max(base, key=lambda x: (x[3], x[4]))
                    sched.append(("%s:%s" % (nm, c), nm, c, r.randint(bs[3], n - 1), bs[4] + 1))
            per = Counter(x[3] for x in sched)
            if max(per.values()) <= 10 and min(per.get(i, 0) for i in range(n)) >= 2:
                break
        else:
            raise RuntimeError("could not schedule " + self.cid)
        self.sched = sched

        for key, nm, kind, sess, rank in sched:
            base = kind.split(":")[0]
            if kind == "pet2":
                slots = self.facts[nm]["pet2"]
                self.add_item(key, nm, "pet", F["pet"]["state"], slots, sess, rank)
            elif kind == "jobcity":
                js = dict(self.facts[nm]["job"])
                if "employer2" in js:
                    js["employer"] = js["employer2"]
                self.add_item(key, nm, "jobcity", F["jobcity"]["state"], js, sess, rank)
            elif kind in ("partnerjob", "sibcity", "kidsport"):
                parent = {"partnerjob": "partner", "sibcity": "sibling", "kidsport": "kid"}[kind]
                self.add_item(key, nm, kind, F[kind]["state"], self.facts[nm][parent], sess, rank)
            elif kind.endswith(":upd"):
                self.add_item(key, nm, base, F[base]["update"], self.facts[nm][base], sess, rank)
            else:
                slots = self.facts[nm][base]
                if base == "trip":
                    d = self.dates[sess] + dt.timedelta(days=r.randint(12, 80))
                    slots["tdate_iso"] = d.isoformat()
                    slots["tdate"] = r.choice([
                        "%s %d" % (MONTHS[d.month - 1], d.day),
                        "the %s of %s" % (ordinal(d.day), MONTHS[d.month - 1]),
                        "%s %s" % (MONTHS[d.month - 1], ordinal(d.day)),
                    ])
                self.add_item(key, nm, base, F[base]["state"], slots, sess, rank)
            self.key2session[key] = sess

    # -- dialogue ----------------------------------------------------------
    def distractor(self, date):
        r = self.rng
        g = r.choice("mf")
        slots = dict(
            tp=r.choice([n for n in OTHERS_F + OTHERS_M if n not in self.taken]),
            tp2=r.choice([n for n in OTHERS_F + OTHERS_M if n not in self.taken]),
            city=self.fresh(CITIES), dish=self.fresh(DISHES),
            sp=r.choice([v for q, vs in SPECIES if q not in self.taken for v in vs]),
            petname=self.fresh(PETNAMES), role=self.fresh(ROLES),
            employer="%s %s" % (self.fresh(EMP_A), r.choice(EMP_B)),
            allergen=self.fresh(ALLERGENS), instrument=self.fresh(INSTRUMENTS),
            place=self.fresh(PLACES), title="The %s %s" % (r.choice(BOOK_A), r.choice(BOOK_B)),
            author="%s %s" % (r.choice(OTHERS_F + OTHERS_M), r.choice(SURNAMES)),
            car=self.fresh(CARS), team=self.fresh(TEAMS), hobby=self.fresh(HOBBIES),
            language=self.fresh(LANGUAGES), condition=self.fresh(CONDITIONS),
            item=self.fresh(ITEMS), artist=self.fresh(ARTISTS),
            street="%s %s" % (self.fresh(STREET_A), r.choice(STREET_B)),
            goal=self.fresh(GOALS), plan=self.fresh(PLANS).replace("my ", "their "),
            kidrel=r.choice(["son", "daughter", "nephew", "niece"]),
            month=MONTHS[date.month - 1],
        )
        while slots["tp2"] == slots["tp"]:
            slots["tp2"] = r.choice([n for n in OTHERS_F + OTHERS_M if n not in self.taken])
        slots["a_role"] = with_article(slots["role"])
        del g
        return self.fmt(r.choice(DISTRACTORS), slots)

    def build_session(self, si):
        r = self.rng
        date = self.dates[si]
        names = [p[0] for p in self.people]
        first = r.randint(0, 1)
        turns = []  # dicts: speaker, text, key, kind
        n_here = sum(1 for it in self.items if it["session"] == si)
        target = r.randint(max(20, min(40, 8 + 3 * n_here)), 40)

        def who():
            return names[(first + len(turns)) % 2]

        def other(nm):
            return names[1] if nm == names[0] else names[0]

        def emit(text, kind, key=None):
            turns.append(dict(speaker=who(), text=text, key=key, kind=kind))

        def room(extra):
            # can we afford `extra` more turns and still fit every queued item (<= 3 turns each)?
            return len(turns) + extra + 3 * len(queue) + 2 <= 40

        def filler():
            prev = turns[-1] if turns else None
            x = r.random()
            if prev and prev["text"].endswith("?") and prev["kind"] in ("small", "dis") and x < 0.8:
                emit(r.choice(ANSWERS), "ans")
            elif prev and prev["kind"] == "dis" and x < 0.45:
                emit(r.choice(REACT["neu"]), "react")
            elif x < 0.72:
                emit(self.distractor(date), "dis")
            else:
                emit(self.fmt(r.choice(SMALLTALK), {"month": MONTHS[date.month - 1]}), "small")

        emit(self.fmt(r.choice(GREET), {"other": other(who())}), "greet")
        emit(self.fmt(r.choice(GREET_BACK), {"other": other(who())}), "greet")

        queue = [it for it in self.items if it["session"] == si]
        r.shuffle(queue)
        queue.sort(key=lambda it: it["rank"])
        n_items = len(queue)
        while queue:
            cur = who()
            it = queue[0]
            slack = target - 2 - len(turns) - 2.6 * len(queue)
            if turns[-1]["kind"] != "lead" and slack > 0 and room(1) and r.random() < min(0.75, slack / (slack + 2.5 * len(queue))):
                filler()
                continue
            if it["speaker"] != cur:
                lead = F.get(it["topic"], {}).get("lead")
                if lead and r.random() < 0.45 and not turns[-1]["text"].endswith("?"):
                    emit(r.choice(lead), "lead")
                elif turns[-1]["text"].endswith("?") and turns[-1]["kind"] != "lead":
                    emit(r.choice(ANSWERS), "ans")
                elif room(1) and r.random() < 0.6:
                    emit(self.distractor(date), "dis")
                else:
                    emit(r.choice(BACKCHANNEL), "back")
                continue
            emit(it["text"], "fact", it["key"])
            queue.pop(0)
            react = r.choice(REACT[it["sent"]])
            follow = F.get(it["topic"], {}).get("follow")
            x = r.random()
            if follow and x < 0.4:
                extra = self.fmt(r.choice(follow), it["slots"])
                if extra.split()[0] != react.split()[0]:
                    react = react + " " + extra
            elif x < 0.55:
                react = react + " " + r.choice(QBACK)
            emit(react, "react")
            if room(1) and (react.endswith("?") or r.random() < 0.25):
                emit(r.choice(REPLIES), "reply")
        while len(turns) < target - 2:
            queue = []
            filler()
        if turns[-1]["text"].endswith("?") and len(turns) <= 37:
            emit(r.choice(ANSWERS), "ans")
        emit(r.choice(CLOSE), "close")
        emit(self.fmt(r.choice(CLOSE_BACK), {"other": other(who())}), "close")
        assert 20 <= len(turns) <= 40, (self.cid, si, len(turns), n_items)

        out = []
        for ti, t in enumerate(turns, 1):
            tid = "%s-s%d-t%02d" % (self.cid, si + 1, ti)
            if t["key"]:
                self.key2turn[t["key"]] = tid
                self.turn_text[tid] = t["text"]
            out.append({"id": tid, "speaker": t["speaker"], "text": t["text"]})
        return {"date": date.isoformat(), "turns": out}

    def build(self):
        self.plan()
        self.turn_text = {}
        self.sessions = [self.build_session(si) for si in range(self.n_sessions)]
        self.all_turns = {t["id"]: t for s in self.sessions for t in s["turns"]}
        self.make_questions()

    # -- questions ---------------------------------------------------------
    def make_questions(self):
        r = self.rng
        names = [p[0] for p in self.people]
        gender = dict(self.people)
        qs = []
        used_facts = set()

        def qfmt(template, nm, slots):
            d = dict(slots)
            d.update(pronouns(gender[nm]))
            d["P"] = nm
            return self.fmt(template, d)

        def ev_text(ev):
            return " ".join(self.all_turns[e]["text"] for e in ev)

        def best(templates, nm, slots, ev, lowest):
            scored = []
            for t in templates:
                q = qfmt(t, nm, slots)
                ov = len(content_words(q, names) & content_words(ev_text(ev), names))
                scored.append((ov if lowest else -ov, r.random(), q))
            scored.sort()
            return scored[0][2]

        def add(cat, nm, q, ev, answer, date=None):
            for e in ev:
                assert e in self.all_turns, (self.cid, e)
            d = {"question": q, "category": cat, "about": nm, "evidence": list(ev)}
            if date:
                d["date"] = date
            d["_answer"] = answer
            qs.append(d)

        def current(nm, t):
            """Slots with the latest value and the evidence turn stating it."""
            s = dict(self.facts[nm][t])
            k = "%s:%s" % (nm, t)
            if t in self.upd[nm]:
                k += ":upd"
                for a, b in (("city", "city2"), ("street", "street2"), ("role", "role2"),
                             ("a_role", "a_role2"), ("employer", "employer2"), ("car", "car2"),
                             ("title", "title2"), ("author", "author2")):
                    if b in s:
                        s[a] = s[b]
            return s, [self.key2turn[k]]

        def answer_of(nm, t, s):
            return {
                "home": lambda: "%s, %s" % (s["street"], s["city"]),
                "job": lambda: "%s at %s" % (s["role"], s["employer"]),
                "pet": lambda: "%s (%s)" % (s["petname"], s["q"]),
                "partner": lambda: "%s (%s)" % (s["pname"], s["pword"]),
                "kid": lambda: "%s, %s" % (s["kname"], s["age"]),
                "allergy": lambda: s["allergen"], "food": lambda: s["dish"],
                "hobby": lambda: s["hobby"], "instrument": lambda: s["instrument"],
                "trip": lambda: s["place"], "purchase": lambda: s["item"],
                "car": lambda: s["car"], "birthday": lambda: s["bday"],
                "book": lambda: s["title"], "gym": lambda: "%s a week, %s" % (s["freq"], s["act"]),
                "team": lambda: s["team"], "sibling": lambda: s["sname"],
                "health": lambda: s["condition"], "language": lambda: s["language"],
                "saving": lambda: s["goal"], "commute": lambda: s["mnoun"],
                "music": lambda: s["artist"],
            }[t]()

        # candidate facts for single / paraphrase (alternate speakers)
        cands = []
        for nm in names:
            for t in self.types[nm]:
                if t == "plan":
                    continue
                cands.append((nm, t))
        r.shuffle(cands)
        cands.sort(key=lambda x: 0 if x[0] == names[0] else 1)
        by_person = {nm: [c for c in cands if c[0] == nm] for nm in names}
        order = []
        for i in range(max(len(v) for v in by_person.values())):
            for nm in names if i % 2 == 0 else names[::-1]:
                if i < len(by_person[nm]):
                    order.append(by_person[nm][i])

        n_single, n_para = 6, 5

        def overlap(q, ev):
            return len(content_words(q, names) & content_words(ev_text(ev), names))

        scored = []
        for pos, (nm, t) in enumerate(order):
            s, ev = current(nm, t)
            qs_ = best(F[t]["single"], nm, s, ev, lowest=False)
            qp = best(F[t]["para"], nm, s, ev, lowest=True)
            scored.append(dict(nm=nm, t=t, s=s, ev=ev, qs=qs_, qp=qp, pos=pos,
                               os=overlap(qs_, ev), op=overlap(qp, ev)))
        # single: facts whose wording the question can reuse; paraphrase: facts it cannot
        singles = sorted(scored, key=lambda x: (x["os"] == 0, x["pos"]))[:n_single]
        rest = [x for x in scored if x not in singles]
        paras = sorted(rest, key=lambda x: (x["op"] > 0, x["pos"]))[:n_para]
        for x in singles:
            add("single", x["nm"], x["qs"], x["ev"], answer_of(x["nm"], x["t"], x["s"]))
        for x in paras:
            add("paraphrase", x["nm"], x["qp"], x["ev"], answer_of(x["nm"], x["t"], x["s"]))

        # temporal
        temporal = []
        for nm in names:
            f = self.facts[nm]
            k = lambda t, u=False: self.key2turn["%s:%s%s" % (nm, t, ":upd" if u else "")]
            sess_date = lambda t, u=False: self.dates[self.key2session["%s:%s%s" % (nm, t, ":upd" if u else "")]]
            upd = self.upd[nm]
            s = f["home"]
            if "home" in upd:
                temporal.append(("move_before", 2, nm, "Where did %s live before moving to %s?" % (nm, s["city2"]),
                                 [k("home"), k("home", True)], "%s, %s" % (s["street"], s["city"]), None))
                temporal.append(("move_when", 1, nm, "When did %s move to %s?" % (nm, s["city2"]),
                                 [k("home", True)], sess_date("home", True).isoformat(), None))
                d0, d1 = sess_date("home"), sess_date("home", True)
                months = []
                y, m = d0.year, d0.month + 1
                while True:
                    if m > 12:
                        y, m = y + 1, 1
                    last = (dt.date(y + (m == 12), m % 12 + 1, 1) - dt.timedelta(days=1))
                    if last >= d1:
                        break
                    months.append((y, m))
                    m += 1
                if months:
                    y, m = r.choice(months)
                    temporal.append(("home_in_month", 2, nm, "Where was %s living in %s %d?" % (nm, MONTHS[m - 1], y),
                                     [k("home")], s["city"], "%d-%02d" % (y, m)))
            else:
                temporal.append(("move_when", 1, nm, "When did %s move to %s?" % (nm, s["city"]),
                                 [k("home")], sess_date("home").isoformat(), None))
            s = f["job"]
            if "job" in upd:
                temporal.append(("job_before", 2, nm, "Where did %s work before joining %s?" % (nm, s["employer2"]),
                                 [k("job"), k("job", True)], s["employer"], None))
                temporal.append(("job_when", 1, nm, "When did %s start working at %s?" % (nm, s["employer2"]),
                                 [k("job", True)], sess_date("job", True).isoformat(), None))
            else:
                temporal.append(("job_when", 1, nm, "When did %s start working at %s?" % (nm, s["employer"]),
                                 [k("job")], sess_date("job").isoformat(), None))
            if "car" in upd:
                s = f["car"]
                temporal.append(("car_before", 2, nm, "What car did %s drive before the %s?" % (nm, s["car2"]),
                                 [k("car"), k("car", True)], s["car"], None))
            if "book" in upd:
                s = f["book"]
                temporal.append(("book_before", 2, nm, "What was %s reading before %s?" % (nm, s["title2"]),
                                 [k("book"), k("book", True)], s["title"], None))
            if "trip" in f:
                s = f["trip"]
                temporal.append(("trip_when", 1, nm, r.choice([
                    "When is %s going to %s?", "What date does %s leave for %s?",
                    "When does %s's trip to %s start?"]) % (nm, s["place"]),
                    [k("trip")], s["tdate_iso"], None))
            if "plan" in f:
                s = f["plan"]
                d = sess_date("plan")
                if r.random() < 0.5:
                    temporal.append(("plan", 2, nm, "What did %s say %s would do next weekend?" % (nm, pronouns(gender[nm])["he"]),
                                     [k("plan")], s["plan"], None))
                else:
                    temporal.append(("plan", 2, nm, "On %s, what did %s say %s would do the following weekend?" % (
                        nice_date(d), nm, pronouns(gender[nm])["he"]), [k("plan")], s["plan"], d.isoformat()))
            if "purchase" in f:
                s = f["purchase"]
                temporal.append(("purchase_when", 1, nm, "When did %s buy %s?" % (nm, s["item"]),
                                 [k("purchase")], sess_date("purchase").isoformat(), None))
            if "health" in f:
                s = f["health"]
                temporal.append(("health_when", 1, nm, "When did %s have %s?" % (nm, s["condition"]),
                                 [k("health")], sess_date("health").isoformat(), None))
        r.shuffle(temporal)
        temporal.sort(key=lambda x: -x[1])
        picked, kinds = [], set()
        for tq in temporal:
            if len(picked) == 3:
                break
            if tq[0] in kinds or any(tq[3] == p[3] for p in picked):
                continue
            picked.append(tq)
            kinds.add(tq[0])
        if len(picked) < 3:
            for tq in temporal:
                if len(picked) == 3:
                    break
                if tq not in picked:
                    picked.append(tq)
        for kind, _w, nm, q, ev, ans, date in picked:
            add("temporal", nm, q, ev, ans, date)

        # multi-hop: answer needs two turns
        multi = []
        for nm in names:
            f = self.facts[nm]
            k = lambda key: self.key2turn["%s:%s" % (nm, key)]
            js, jev = current(nm, "job")
            if "jobcity" in self.comp[nm]:
                multi.append(("jobcity", nm, r.choice([
                    "Which city is %s's employer based in?" % nm,
                    "In which city is %s's workplace?" % nm,
                    "Which city does %s have to get to for %s job?" % (nm, pronouns(gender[nm])["his"])]),
                    jev + [k("jobcity")], f["job"]["jobcity"]))
            if "pet2" in self.comp[nm]:
                multi.append(("petcount", nm, r.choice([
                    "How many pets does %s have?" % nm,
                    "What are the names of %s's pets?" % nm,
                    "Which animals live with %s?" % nm]),
                    [k("pet"), k("pet2")], "%s and %s" % (f["pet"]["petname"], f["pet2"]["petname"])))
            if "partnerjob" in self.comp[nm]:
                s = f["partner"]
                multi.append(("partnerjob", nm, r.choice([
                    "What does %s's %s do for work?" % (nm, s["pword"]),
                    "What is the job of %s's %s?" % (nm, s["pword"])]),
                    [k("partner"), k("partnerjob")], s["prole"]))
            if "sibcity" in self.comp[nm]:
                s = f["sibling"]
                multi.append(("sibcity", nm, r.choice([
                    "Where does %s's %s live?" % (nm, s["sibword"]),
                    "Which city is %s's %s in?" % (nm, s["sibword"])]),
                    [k("sibling"), k("sibcity")], s["scity"]))
            if "kidsport" in self.comp[nm]:
                s = f["kid"]
                multi.append(("kidsport", nm, r.choice([
                    "What sport does %s's %s do?" % (nm, s["kidword"]),
                    "Which sport is %s's %s into?" % (nm, s["kidword"])]),
                    [k("kid"), k("kidsport")], s["sport"]))
        r.shuffle(multi)
        fallback = []
        for nm in names:
            if "home" in self.upd[nm]:
                s = self.facts[nm]["home"]
                fallback.append(("cities", nm, "Which cities has %s lived in?" % nm,
                                 [self.key2turn["%s:home" % nm], self.key2turn["%s:home:upd" % nm]],
                                 "%s, then %s" % (s["city"], s["city2"])))
            if "job" in self.upd[nm]:
                s = self.facts[nm]["job"]
                fallback.append(("employers", nm, "Which companies has %s worked for?" % nm,
                                 [self.key2turn["%s:job" % nm], self.key2turn["%s:job:upd" % nm]],
                                 "%s, then %s" % (s["employer"], s["employer2"])))
        r.shuffle(fallback)
        used_ev = {tuple(q["evidence"]) for q in qs}
        for m in (multi + [x for x in fallback if tuple(x[3]) not in used_ev])[:3]:
            add("multi", m[1], m[2], m[3], m[4])

        # unanswerable: facts never stated about that person
        n_none = 2 + (int(self.cid[1:]) % 2)
        nones = []
        for nm in names:
            mine = set(self.types[nm])
            oth = set(self.types[[x for x in names if x != nm][0]])
            excl = set()
            if "jobcity" in self.comp[nm] or "car" in mine:
                excl.add("commute")
            if mine & {"instrument", "language", "gym"}:
                excl.add("hobby")
            if mine & {"saving", "plan"} or "sibcity" in self.comp[nm]:
                excl.add("trip")
            if mine & {"hobby", "commute"}:
                excl.add("gym")
            if "allergy" in mine:
                excl.add("health")
            for t in OPTIONAL_TYPES:
                if t in mine or t in excl or "none" not in F[t]:
                    continue
                s = {}
                othf = self.facts[[x for x in names if x != nm][0]]
                if t == "pet":
                    s["q"] = othf["pet"]["q"] if "pet" in othf else r.choice(["dog", "cat", "rabbit"])
                elif t == "partner":
                    s["pword"] = othf["partner"]["pword"] if "partner" in othf else r.choice(["wife", "husband", "partner"])
                elif t == "kid":
                    s["kidword"] = othf["kid"]["kidword"] if "kid" in othf else r.choice(["son", "daughter"])
                elif t == "sibling":
                    s["sibword"] = othf["sibling"]["sibword"] if "sibling" in othf else r.choice(["brother", "sister"])
                weight = 2 if t in oth else 1
                nones.append((weight, r.random(), nm, t, qfmt(r.choice(F[t]["none"]), nm, s)))
        nones.sort(key=lambda x: (-x[0], x[1]))
        picked_n, seen_t = [], set()
        for w, _x, nm, t, q in nones:
            if len(picked_n) == n_none:
                break
            if t in seen_t or (picked_n and picked_n[-1][0] == nm and len(picked_n) < 2):
                continue
            picked_n.append((nm, t, q))
            seen_t.add(t)
        for nm, t, q in picked_n:
            add("none", nm, q, [], None)

        r.shuffle(qs)
        self.questions = []
        for i, q in enumerate(qs, 1):
            q2 = {"id": "%s-q%02d" % (self.cid, i)}
            q2.update(q)
            self.questions.append(q2)

    def to_json(self):
        return {
            "id": self.cid,
            "speakers": [p[0] for p in self.people],
            "sessions": self.sessions,
            "questions": [{k: v for k, v in q.items() if not k.startswith("_")} for q in self.questions],
        }


# ---------------------------------------------------------------------------
# Main: generate, write, validate, summarise.
# ---------------------------------------------------------------------------

def generate():
    rng = random.Random(SEED)
    fem, mal = SPEAKERS_F[:], SPEAKERS_M[:]
    rng.shuffle(fem)
    rng.shuffle(mal)
    convs = []
    for i in range(1, N_CONVERSATIONS + 1):
        pair = rng.choice(["ff", "mm", "fm", "fm"])
        people = []
        for g in pair:
            pool = fem if g == "f" else mal
            if not pool:
                pool, g = (mal, "m") if g == "f" else (fem, "f")
            people.append((pool.pop(), g))
        rng.shuffle(people)
        c = Conversation(i, random.Random("%d-%d" % (SEED, i)), people[0], people[1])
        c.build()
        convs.append(c)
    return convs


def write(convs):
    lines = [json.dumps(c.to_json(), separators=(",", ":"), ensure_ascii=True) for c in convs]
    body = '{"version":1,"conversations":[\n' + ",\n".join(lines) + "\n]}\n"
    with open(OUT, "w", encoding="ascii", newline="\n") as fh:
        fh.write(body)
    return len(body)


CATEGORIES = ("single", "paraphrase", "temporal", "multi", "none")


def validate(path):
    with open(path, encoding="ascii") as fh:
        raw = fh.read()
    assert raw.isascii()
    data = json.loads(raw)
    assert data["version"] == 1
    speakers = set(SPEAKERS_F + SPEAKERS_M)
    assert len(speakers) == len(SPEAKERS_F) + len(SPEAKERS_M)
    assert not speakers & set(OTHERS_F + OTHERS_M + PETNAMES + SURNAMES)
    convs = data["conversations"]
    assert len(convs) >= 24
    ids, speakers_seen = set(), set()
    n_turns, cats = 0, Counter()
    for c in convs:
        assert set(c) == {"id", "speakers", "sessions", "questions"}
        assert c["id"] not in ids
        ids.add(c["id"])
        sp = c["speakers"]
        assert len(sp) == 2 and sp[0] != sp[1]
        for s in sp:
            assert s not in speakers_seen, "speaker in two conversations: " + s
            speakers_seen.add(s)
        assert 4 <= len(c["sessions"]) <= 7
        dates = [s["date"] for s in c["sessions"]]
        assert dates == sorted(dates) and len(set(dates)) == len(dates)
        for d in dates:
            dt.date.fromisoformat(d)
            assert "2025-01-01" <= d <= "2026-12-31"
        turn_ids = set()
        for s in c["sessions"]:
            assert 20 <= len(s["turns"]) <= 40, (c["id"], s["date"], len(s["turns"]))
            prev = None
            for t in s["turns"]:
                assert set(t) == {"id", "speaker", "text"}
                assert t["id"].startswith(c["id"] + "-s")
                assert t["id"] not in turn_ids and t["id"] not in ids
                turn_ids.add(t["id"])
                assert t["speaker"] in sp and t["speaker"] != prev, t["id"]
                assert "{" not in t["text"] and "}" not in t["text"], t["text"]
                prev = t["speaker"]
                n_turns += 1
        ids |= turn_ids
        others = set(sp)
        assert 15 <= len(c["questions"]) <= 21, len(c["questions"])
        for q in c["questions"]:
            assert set(q) <= {"id", "question", "category", "about", "evidence", "date"}
            assert q["id"] not in ids
            ids.add(q["id"])
            assert q["category"] in CATEGORIES
            assert q["about"] in others
            assert q["about"] in q["question"]
            assert "{" not in q["question"]
            cats[q["category"]] += 1
            if q["category"] == "none":
                assert q["evidence"] == []
            else:
                assert q["evidence"] and len(set(q["evidence"])) == len(q["evidence"])
                for e in q["evidence"]:
                    assert e in turn_ids, e
            if q["category"] == "multi":
                assert len(q["evidence"]) >= 2
            if "date" in q:
                assert q["category"] == "temporal"
    total = sum(cats.values())
    assert n_turns >= 3200, n_turns
    assert total >= 400, total
    share = {k: cats[k] / total for k in CATEGORIES}
    assert 0.26 <= share["single"] <= 0.34, share
    assert 0.21 <= share["paraphrase"] <= 0.29, share
    assert 0.12 <= share["temporal"] <= 0.19, share
    assert 0.12 <= share["multi"] <= 0.19, share
    assert 0.09 <= share["none"] <= 0.16, share
    return data, n_turns, cats


def quality(convs, data):
    names = set()
    for c in data["conversations"]:
        names |= set(c["speakers"])
    turn = {t["id"]: t for c in data["conversations"] for s in c["sessions"] for t in s["turns"]}
    rng = random.Random(7)
    paras = [(c, q) for c in convs for q in c.questions if q["category"] == "paraphrase"]
    overlaps = []
    for c, q in paras:
        ev = " ".join(turn[e]["text"] for e in q["evidence"])
        overlaps.append(len(content_words(q["question"], names) & content_words(ev, names)))
    sov = Counter()
    for c in convs:
        for q in c.questions:
            if q["category"] == "single":
                ev = " ".join(turn[e]["text"] for e in q["evidence"])
                sov[len(content_words(q["question"], names) & content_words(ev, names))] += 1
    print("single questions: content-word overlap with evidence:", dict(sorted(sov.items())))
    print("paraphrase questions: content-word overlap with evidence (excluding names):",
          dict(sorted(Counter(overlaps).items())))
    for c, q in rng.sample(paras, 3):
        ev = " | ".join(turn[e]["text"] for e in q["evidence"])
        shared = content_words(q["question"], names) & content_words(ev, names)
        print("  Q: %s\n  E: %s\n  A: %s   shared=%s" % (q["question"], ev, q["_answer"], sorted(shared)))
    for cat in ("temporal", "multi"):
        c, q = rng.choice([(c, q) for c in convs for q in c.questions if q["category"] == cat])
        ev = " | ".join(turn[e]["text"] for e in q["evidence"])
        print("  [%s] Q: %s\n  E: %s\n  A: %s" % (cat, q["question"], ev, q["_answer"]))
    lens = sorted(len(t["text"].split()) for t in turn.values())
    n = len(lens)
    print("turn length (words): min %d, p10 %d, p25 %d, median %d, p75 %d, p90 %d, max %d, mean %.1f" % (
        lens[0], lens[n // 10], lens[n // 4], lens[n // 2], lens[3 * n // 4], lens[9 * n // 10], lens[-1],
        sum(lens) / n))
    buckets = Counter(min(l // 5, 5) for l in lens)
    print("  histogram:", ", ".join("%s: %d" % ("%d-%d" % (b * 5, b * 5 + 4) if b < 5 else "25+", buckets[b])
                                    for b in range(6)))
    texts = Counter(t["text"] for t in turn.values())
    print("distinct turn texts: %d of %d" % (len(texts), n))


def main():
    convs = generate()
    size = write(convs)
    data, n_turns, cats = validate(OUT)
    total = sum(cats.values())
    print("wrote %s (%d bytes)" % (os.path.relpath(OUT), size))
    print("conversations=%d sessions=%d turns=%d questions=%d | %s" % (
        len(data["conversations"]), sum(len(c["sessions"]) for c in data["conversations"]), n_turns, total,
        " ".join("%s=%d (%.0f%%)" % (k, cats[k], 100.0 * cats[k] / total) for k in CATEGORIES)))
    if "--quiet" not in sys.argv:
        quality(convs, data)


if __name__ == "__main__":
    main()
