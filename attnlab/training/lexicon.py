"""Word lists for the English→French classroom corpus, plus the small bits of morphology they need.

Everything here is data: nouns with gender and semantic tags, adjectives with their four French forms,
verbs with their conjugations, adverbs with where they go. How they are put into phrases lives in
`grammar.py`, which sentences are made in `corpus.py`. The tables are plain text so that adding a word is
adding an entry (rows are separated by newlines or semicolons).

Semantic tags keep sentences sensible (people read books, cats do not). A noun's first tag is its class,
which is what adjectives look at; the other tags say where it can appear (`surf`: something to be *on*,
`cont`: something to be *in*, `cross`: something to cross, ...).
"""

from __future__ import annotations

from dataclasses import dataclass

_VOWELS = frozenset("aeiouàâäéèêëîïôöûüœ")
# Words whose h is "aspirated": no elision before them (le hibou, le hérisson, un mur haut).
_ASPIRATED = frozenset({"hibou", "hiboux", "hérisson", "hérissons", "haut", "haute", "hauts", "hautes"})


def vowel_sound(word: str) -> bool:
    """True where French elides before `word` (l'arbre, l'homme; but le hibou)."""
    return bool(word) and (word[0] in _VOWELS or (word[0] == "h" and word not in _ASPIRATED))


def _english_plural(word: str) -> str:
    if word.endswith(("s", "x", "ch", "sh")):
        return word + "es"
    if word.endswith("y") and word[-2] not in "aeiou":
        return word[:-1] + "ies"
    return word + "s"


def _english_third_person(word: str) -> str:
    return word + "es" if word.endswith("o") else _english_plural(word)


def _french_plural(word: str) -> str:
    if word.endswith(("s", "x", "z")):
        return word
    if word.endswith(("eau", "au")):
        return word + "x"
    if word.endswith("al"):
        return word[:-2] + "aux"
    return word + "s"


def _french_feminine(word: str) -> str:
    for masc, fem in (
        ("e", "e"),
        ("eux", "euse"),
        ("er", "ère"),
        ("if", "ive"),
        ("el", "elle"),
        ("on", "onne"),
        ("en", "enne"),
    ):
        if word.endswith(masc):
            return word[: len(word) - len(masc)] + fem
    return word + "e"


@dataclass(frozen=True)
class Noun:
    en: str
    en_pl: str
    fr: str
    fr_pl: str
    gender: str  # "m" or "f"; for people it is also their sex, so he/she and il/elle agree
    tags: frozenset[str]
    kind: str  # the first tag: anim, pers, food, drink, obj, furn, veh, place

    @property
    def countable(self) -> bool:
        return "mass" not in self.tags and "sg" not in self.tags


@dataclass(frozen=True)
class Adj:
    en: str
    forms: tuple[str, str, str, str]  # masc sg, fem sg, masc pl, fem pl
    pre: bool  # goes before the noun in French (le petit chat) instead of after (le chat noir)
    kinds: frozenset[str]  # noun classes it can describe
    before_vowel: str | None = None  # masc sg form before a vowel: bel, vieil, nouvel

    def form(self, gender: str, plural: bool) -> str:
        return self.forms[(gender == "f") + 2 * plural]


@dataclass(frozen=True)
class Verb:
    en: str
    en_3sg: str
    en_past: str
    particle: str  # English word between the verb and its object: look *for*, go *to*
    fr: str  # infinitive
    present: tuple[str, str, str, str, str]  # je, il/elle, nous, vous, ils/elles
    pp: str  # past participle, masc sg
    etre: bool  # passé composé with être (and agreement with the subject)
    subj: frozenset[str]
    obj: frozenset[str] | None  # None: intransitive
    fr_prep: str  # French preposition before the object: entrer *dans*, aller *à*

    def participle(self, gender: str, plural: bool) -> str:
        fem = self.pp + "e" if gender == "f" else self.pp
        return fem + "s" if plural and not fem.endswith("s") else fem


@dataclass(frozen=True)
class Adverb:
    en: str
    fr: str
    kind: str  # freq (before the English verb), manner, time (sentence end), degree (before adjectives)
    short: bool = False  # French puts it between auxiliary and participle: il a bien mangé
    only: str = ""  # "past", "pres" or "plural": where it makes sense


# english  french  tags  [english plural]  [french plural]     ("-" keeps the regular form)
_NOUNS = """
cat chat m anim; dog chien m anim; horse cheval m anim; mouse souris f anim mice; cow vache f anim
bird oiseau m anim; rabbit lapin m anim; goat chèvre f anim; duck canard m anim; fox renard m anim
bear ours m anim; wolf loup m anim wolves; turtle tortue f anim; lion lion m anim; pig cochon m anim
frog grenouille f anim; hen poule f anim; owl hibou m anim - hiboux; bee abeille f anim
snake serpent m anim; elephant éléphant m anim; animal animal m anim; monkey singe m anim
tiger tigre m anim; squirrel écureuil m anim; ant fourmi f anim; hedgehog hérisson m anim
spider araignée f anim; whale baleine f anim; butterfly papillon m anim
man homme m pers men; woman femme f pers women; boy garçon m pers; girl fille f pers; king roi m pers
queen reine f pers; mother mère f pers; father père m pers; brother frère m pers; sister sœur f pers
uncle oncle m pers; aunt tante f pers; grandmother grand-mère f pers - grands-mères
grandfather grand-père m pers - grands-pères; prince prince m pers; princess princesse f pers
waiter serveur m pers; waitress serveuse f pers; actor acteur m pers; actress actrice f pers
apple pomme f food; bread pain m food,mass; cake gâteau m food; egg œuf m food; orange orange f food
cheese fromage m food,mass; soup soupe f food,mass; meat viande f food,mass; carrot carotte f food
banana banane f food; fish poisson m food,sg; pear poire f food; cookie biscuit m food
strawberry fraise f food; tomato tomate f food tomatoes; water eau f drink,mass; milk lait m drink,mass
coffee café m drink,mass; tea thé m drink,mass; juice jus m drink,mass
ball ballon m obj; book livre m obj,read,open; key clé f obj; letter lettre f obj,read,open
hat chapeau m obj; shoe chaussure f obj; cup tasse f obj; box boîte f obj,open,surf,under,cont
bag sac m obj,open,cont; pen stylo m obj; glass verre m obj; bottle bouteille f obj,open
flower fleur f obj; stone pierre f obj; toy jouet m obj,fix; umbrella parapluie m obj,open,fix,under
newspaper journal m obj,read; knife couteau m obj knives; spoon cuillère f obj; plate assiette f obj
phone téléphone m obj,fix; coat manteau m obj; shirt chemise f obj; clock horloge f obj,fix
lamp lampe f obj,fix; map carte f obj,read; ring bague f obj
table table f furn,surf,under,loc; chair chaise f furn,surf,under,fix,loc; bed lit m furn,surf,under,loc
mat tapis m furn,surf,loc; sofa canapé m furn,surf,under,loc; door porte f furn,open,fix,loc
window fenêtre f furn,open,fix,loc; wall mur m furn,climb,build,loc; fence clôture f furn,climb,build,loc
tree arbre m furn,climb,under,cont,loc; rock rocher m furn,surf,climb,loc
car voiture f veh,surf,under,cont,fix,loc; bike vélo m veh,fix,loc; boat bateau m veh,cont,build
train train m veh,cont; bus bus m veh,cont; truck camion m veh,fix,cont,loc
house maison f place,cont,enter,build,dest,loc; school école f place,cont,enter,visit,dest,loc
garden jardin m place,cont,enter,dest; park parc m place,cont,visit,dest; street rue f place,cross,cont
road route f place,cross,surf; river rivière f place,cross,cont,dest,water
bridge pont m place,cross,surf,under,build; forest forêt f place,cross,cont; field champ m place,cont
city ville f place,visit,cont; village village m place,visit,cont,dest; kitchen cuisine f place,cont,enter
room chambre f place,cont,enter; beach plage f place,surf,dest; sea mer f place,cont,water
lake lac m place,cross,cont,dest,water; mountain montagne f place,climb,visit,dest
hill colline f place,climb,surf; shop magasin m place,cont,enter,dest,loc
market marché m place,cont,visit,dest; farm ferme f place,cont,visit,dest
church église f place,cont,enter,visit,build,dest,loc; station gare f place,cont,dest,loc
library bibliothèque f place,cont,enter,visit,dest,loc; hospital hôpital m place,cont,enter,dest,loc
island île f place,visit,surf; cave grotte f place,cont,enter; barn grange f place,cont,enter,build,loc
museum musée m place,cont,enter,visit,dest,loc; castle château m place,cont,enter,visit,build,dest,loc
"""

# english  french forms (m/f/mpl/fpl/before-vowel, missing ones are regular)  pre|post  noun classes
_ADJECTIVES = """
black noir post anim,obj,furn,veh; white blanc/blanche post anim,obj,furn,veh,place
red rouge post anim,obj,furn,veh,food; blue bleu post anim,obj,furn,veh
green vert post anim,obj,furn,veh,food; yellow jaune post anim,obj,furn,veh,food
gray gris post anim,obj,furn,veh; brown brun post anim,obj,furn; pink rose post anim,obj,furn,veh
purple violet/violette post obj,furn,veh; big grand pre anim,obj,furn,veh,place
small petit pre anim,pers,obj,furn,veh,place,food
beautiful beau/belle/beaux/belles/bel pre anim,pers,obj,furn,veh,place; young jeune pre anim,pers
old vieux/vieille/vieux/vieilles/vieil pre anim,pers,obj,furn,veh,place; good bon pre food,drink,pers,anim
new nouveau/nouvelle/nouveaux/nouvelles/nouvel pre obj,furn,veh,place
pretty joli pre obj,furn,place,anim,pers; bad mauvais pre food,drink; tired fatigué post anim,pers
happy heureux post anim,pers; sad triste post anim,pers; hungry affamé post anim,pers
angry fâché post anim,pers; scared effrayé post anim,pers; lazy paresseux post anim,pers
sick malade post anim,pers; clever intelligent post anim,pers; kind gentil/gentille post anim,pers
brave courageux post anim,pers; shy timide post anim,pers; curious curieux post anim,pers
calm calme post anim,pers; proud fier post anim,pers; polite poli post pers
nervous nerveux post anim,pers; fast rapide post anim,veh; slow lent post anim,veh
strong fort post anim,pers; weak faible post anim,pers; heavy lourd post obj,furn; light léger post obj
hot chaud post food,drink; cold froid post food,drink,place; wet mouillé post anim,obj
dry sec/sèche post food; clean propre post obj,furn,place,veh; dirty sale post obj,furn,place,veh
empty vide post obj,place; full plein post obj; round rond post obj,furn; soft doux/douce post obj,furn
hard dur post obj,food; sweet sucré post food,drink; fresh frais/fraîche post food,drink
broken cassé post obj,furn,veh; dark sombre post place; wide large post place; narrow étroit post place
deep profond post place; high haut post furn,place; long long/longue post place,obj
dangerous dangereux post place; busy animé post place; steep raide post place
slippery glissant post place,furn; noisy bruyant post place,anim,veh; quiet silencieux post place
expensive cher post obj,veh,food; famous célèbre post pers,place; rich riche post pers
poor pauvre post pers; funny drôle post pers,anim; delicious délicieux post food,drink; ripe mûr post food
salty salé post food; huge énorme post anim,obj,furn,place,veh; tiny minuscule post anim,obj
modern moderne post place,veh,obj; strange étrange post anim,pers,obj,place
"""

# english past [+particle] | french infinitive [pp [je,il,nous,vous,ils]] (* = être) | subject > [prep:]object
# Regular -er verbs need only the infinitive.
_VERBS = """
see saw | voir vu vois,voit,voyons,voyez,voient | anim,pers > anim,pers,obj,food,furn,veh,place
eat ate | manger | anim,pers > food
like liked | aimer | pers > anim,pers,food,obj,place
love loved | adorer | pers > anim,pers,food,obj,place
find found | trouver | anim,pers > obj,food,anim
take took | prendre pris prends,prend,prenons,prenez,prennent | pers > obj,food
carry carried | porter | pers > obj,food,anim
buy bought | acheter acheté achète,achète,achetons,achetez,achètent | pers > obj,food,drink,veh
want wanted | vouloir voulu veux,veut,voulons,voulez,veulent | anim,pers > obj,food,drink
watch watched | regarder | anim,pers > anim,pers,veh,obj
look looked +for | chercher | anim,pers > obj,food,anim,pers
follow followed | suivre suivi suis,suit,suivons,suivez,suivent | anim,pers > anim,pers,veh
catch caught | attraper | anim,pers > anim,obj
wash washed | laver | pers > obj,anim,veh,furn
open opened | ouvrir ouvert ouvre,ouvre,ouvrons,ouvrez,ouvrent | pers > open
close closed | fermer | pers > open
read read | lire lu lis,lit,lisons,lisez,lisent | pers > read
write wrote | écrire écrit écris,écrit,écrivons,écrivez,écrivent | pers > read
drink drank | boire bu bois,boit,buvons,buvez,boivent | anim,pers > drink
cut cut | couper | pers > food
draw drew | dessiner | pers > anim,pers,obj,furn,veh,place
paint painted | peindre peint peins,peint,peignons,peignez,peignent | pers > furn,veh,obj,place
hear heard | entendre entendu entends,entend,entendons,entendez,entendent | anim,pers > anim,pers,veh
help helped | aider | anim,pers > anim,pers
call called | appeler appelé appelle,appelle,appelons,appelez,appellent | pers > anim,pers
meet met | rencontrer | pers > pers
wait waited +for | attendre attendu attends,attend,attendons,attendez,attendent | anim,pers > anim,pers,veh
push pushed | pousser | anim,pers > obj,furn,veh
throw threw | lancer lancé lance,lance,lançons,lancez,lancent | pers > obj,food
lose lost | perdre perdu perds,perd,perdons,perdez,perdent | pers > obj
sell sold | vendre vendu vends,vend,vendons,vendez,vendent | pers > obj,food,veh,anim
hold held | tenir tenu tiens,tient,tenons,tenez,tiennent | pers > obj,food,anim
move moved | déplacer | pers > obj,furn,veh
build built | construire construit construis,construit,construisons,construisez,construisent | pers > build
visit visited | visiter | pers > visit
cross crossed | traverser | anim,pers > cross
climb climbed | escalader | anim,pers > climb
touch touched | toucher | anim,pers > anim,pers,obj,food,furn,veh
smell smelled | sentir senti sens,sent,sentons,sentez,sentent | anim,pers > food,drink,obj
repair repaired | réparer | pers > fix
chase chased | pourchasser | anim,pers > anim,pers
bite bit | mordre mordu mords,mord,mordons,mordez,mordent | anim > anim,pers,obj,food
know knew | connaître connu connais,connaît,connaissons,connaissez,connaissent | pers > pers,place,anim
listen listened +to | écouter | anim,pers > pers,anim
bring brought | apporter | pers > obj,food,drink
kiss kissed | embrasser | pers > pers,anim
sleep slept | dormir dormi dors,dort,dormons,dormez,dorment | anim,pers
run ran | courir couru cours,court,courons,courez,courent | anim,pers
walk walked | marcher | anim,pers
swim swam | nager | anim,pers
play played | jouer | anim,pers
sing sang | chanter | pers
jump jumped | sauter | anim,pers
work worked | travailler | pers
dance danced | danser | pers
laugh laughed | rire ri ris,rit,rions,riez,rient | pers
cry cried | pleurer | pers
live lived | vivre vécu vis,vit,vivons,vivez,vivent | anim,pers
go went +to | aller* allé vais,va,allons,allez,vont | anim,pers > à:dest
come came +from | venir* venu viens,vient,venons,venez,viennent | anim,pers > de:dest
arrive arrived +at | arriver* | anim,pers > à:dest
enter entered | entrer* | anim,pers > dans:enter
leave left | partir* parti pars,part,partons,partez,partent | anim,pers
fall fell | tomber* | anim,pers,obj
"""

# Everyday verbs of corpus version 2 (see everyday.py). A table of their own, so that the version-1 sampling,
# which draws from VERBS, stays exactly what it was (the language model was trained on version 1).
_EVERYDAY_VERBS = """
have had | avoir eu ai,a,avons,avez,ont | anim,pers > anim,pers,obj,food,veh,furn
make made | faire fait fais,fait,faisons,faites,font | pers > food
"""

# english french kind [short] [only:past|pres|plural]
_ADVERBS = """
often souvent freq short; always toujours freq short; sometimes parfois freq short
rarely rarement freq short; quickly vite manner short; slowly lentement manner; well bien manner short
badly mal manner short; quietly doucement manner; carefully prudemment manner; happily joyeusement manner
loudly fort manner; together ensemble time only:plural; today aujourd'hui time
yesterday hier time only:past; now maintenant time only:pres; here ici time; outside dehors time
everywhere partout time; early tôt time; late tard time; very très degree; too trop degree
really vraiment degree; quite assez degree; so si degree
"""

# Subject pronouns (je, il/elle, nous, vous, ils/elles): person index 0..4 as in Verb.present.
BE_PRESENT = (("am", "is", "are", "are", "are"), ("suis", "est", "sommes", "êtes", "sont"))
BE_PAST = (("was", "was", "were", "were", "were"), ("étais", "était", "étions", "étiez", "étaient"))
HAVE_PRESENT = ("ai", "a", "avons", "avez", "ont")
PRONOUNS = {
    "i": "je",
    "you": "vous",
    "we": "nous",
    "he": "il",
    "she": "elle",
    "it": "il",
    "they": "ils",
    "him": "le",
    "her": "la",
    "them": "les",
}

# English determiner (singular, plural) and French (masc sg, fem sg, plural). "a" has no English plural:
# a bare plural ("the cat sees birds") is French "des".
DETERMINERS = {
    "the": (("the", "the"), ("le", "la", "les")),
    "a": (("a", ""), ("un", "une", "des")),
    "my": (("my", "my"), ("mon", "ma", "mes")),
    "your": (("your", "your"), ("votre", "votre", "vos")),
    "his": (("his", "his"), ("son", "sa", "ses")),
    "her": (("her", "her"), ("son", "sa", "ses")),
    "our": (("our", "our"), ("notre", "notre", "nos")),
    "their": (("their", "their"), ("leur", "leur", "leurs")),
    "this": (("this", "these"), ("ce", "cette", "ces")),
    "one": (("one", "one"), ("un", "une", "un")),  # numbers: "one" takes a singular noun, the rest a plural
    **{
        en: ((en, en), (fr, fr, fr))
        for en, fr in zip(
            "two three four five six seven eight nine ten".split(),
            "deux trois quatre cinq six sept huit neuf dix".split(),
            strict=True,
        )
    },
}
NUMBERS = ("one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten")

# English words, French words, noun tag the landmark needs.
PREPOSITIONS = {
    "on": (("on",), ("sur",), "surf"),
    "under": (("under",), ("sous",), "under"),
    "in": (("in",), ("dans",), "cont"),
    "near": (("near",), ("près", "de"), "loc"),
    "behind": (("behind",), ("derrière",), "loc"),
    "in front of": (("in", "front", "of"), ("devant",), "loc"),
    "next to": (("next", "to"), ("à", "côté", "de"), "loc"),
    "with": (("with",), ("avec",), "pers"),
}

# "the animal did not cross the street because it was too tired / too wide": what each verb can fail to
# do to which object, and which adjectives can make the object the reason. The reason adjectives never
# describe animals, and STATES never describe things, so "it" always has exactly one sensible referent.
OBSTACLES = {
    "cross": {
        "street": "wide long busy dangerous",
        "road": "wide long busy dangerous",
        "river": "wide deep long dangerous",
        "bridge": "narrow long slippery dangerous",
        "lake": "wide deep cold",
        "forest": "dark dangerous",
    },
    "climb": {
        "tree": "high slippery",
        "wall": "high slippery",
        "fence": "high",
        "rock": "high slippery",
        "hill": "high steep",
        "mountain": "high steep dangerous",
    },
    "enter": {
        "house": "dark dirty cold",
        "cave": "dark cold dangerous",
        "barn": "dark dirty",
        "room": "dark dirty cold",
        "kitchen": "dirty",
        "shop": "busy",
    },
    "eat": {
        "soup": "hot cold salty",
        "meat": "hard salty cold",
        "bread": "hard dry",
        "cake": "dry sweet",
        "cheese": "hard salty",
        "apple": "hard",
    },
    "drink": {"coffee": "hot sweet cold", "tea": "hot sweet", "milk": "cold hot", "water": "cold hot"},
}
STATES = ("tired", "scared", "lazy", "weak", "sick", "slow", "nervous", "young")


def _entries(text: str) -> list[str]:
    """Table rows: one per line, or several on a line separated by semicolons."""
    return [row.strip() for line in text.strip().splitlines() for row in line.split(";")]


def _parse_nouns(text: str) -> dict[str, Noun]:
    nouns = {}
    for line in _entries(text):
        en, fr, gender, tags, *plurals = line.split()
        en_pl = plurals[0] if plurals and plurals[0] != "-" else _english_plural(en)
        fr_pl = plurals[1] if len(plurals) > 1 else _french_plural(fr)
        tag_list = tags.split(",")
        nouns[en] = Noun(en, en_pl, fr, fr_pl, gender, frozenset(tag_list), tag_list[0])
    return nouns


def _parse_adjectives(text: str) -> dict[str, Adj]:
    adjectives = {}
    for line in _entries(text):
        en, fr, position, kinds = line.split()
        parts = fr.split("/")
        ms = parts[0]
        fs = parts[1] if len(parts) > 1 else _french_feminine(ms)
        mp = parts[2] if len(parts) > 2 else _french_plural(ms)
        fp = parts[3] if len(parts) > 3 else fs + "s"
        vowel_form = parts[4] if len(parts) > 4 else None
        adjectives[en] = Adj(en, (ms, fs, mp, fp), position == "pre", frozenset(kinds.split(",")), vowel_form)
    return adjectives


_IRREGULAR_3SG = {"have": "has"}


def _parse_verbs(text: str) -> dict[str, Verb]:
    verbs = {}
    for line in _entries(text):
        english, french, args = (part.split() for part in line.split("|"))
        en, past, *particle = english
        infinitive, *rest = french
        etre = infinitive.endswith("*")
        infinitive = infinitive.rstrip("*")
        present: tuple[str, str, str, str, str] | None
        if rest:
            forms = rest[1].split(",") if len(rest) > 1 else None  # je, il, nous, vous, ils
            pp, present = rest[0], (forms[0], forms[1], forms[2], forms[3], forms[4]) if forms else None
        else:
            pp, present = infinitive[:-2] + "é", None
        if present is None:  # regular -er verb
            stem = infinitive[:-2]
            soft = "e" if stem.endswith("g") else ""
            present = (stem + "e", stem + "e", stem + soft + "ons", stem + "ez", stem + "ent")
        subj = frozenset(args[0].split(","))
        obj, prep = None, ""
        if len(args) > 2:
            prep, _, obj_tags = args[2].rpartition(":")
            obj = frozenset(obj_tags.split(","))
        en_3sg = _IRREGULAR_3SG.get(en) or _english_third_person(en)
        verbs[en] = Verb(
            en, en_3sg, past, particle[0][1:] if particle else "", infinitive, present, pp, etre, subj, obj, prep
        )
    return verbs


def _parse_adverbs(text: str) -> dict[str, Adverb]:
    adverbs = {}
    for line in _entries(text):
        en, fr, kind, *flags = line.split()
        only = next((f[5:] for f in flags if f.startswith("only:")), "")
        adverbs[en] = Adverb(en, fr, kind, "short" in flags, only)
    return adverbs


NOUNS = _parse_nouns(_NOUNS)
ADJECTIVES = _parse_adjectives(_ADJECTIVES)
VERBS = _parse_verbs(_VERBS)
EVERYDAY_VERBS = _parse_verbs(_EVERYDAY_VERBS)
ADVERBS = _parse_adverbs(_ADVERBS)
