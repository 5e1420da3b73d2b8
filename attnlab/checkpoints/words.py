"""A small English + French word list: the vocabulary of randomly initialised models (`random_model`).

Chosen for classroom sentences ("the black cat sat on the mat" / "le chat noir est assis sur le tapis"):
articles, pronouns, common verbs, animals, colours, places, numbers and punctuation. `default_tokenizer` is
the word tokenizer over it that random models and bare state dicts without a tokenizer get.
"""

from __future__ import annotations

from attnlab.engine.tokenizer import SPECIALS, WordTokenizer

ENGLISH = """
the a an this that these those some every no my your his her its our their
i you he she it we they me him us them who what which where when why how
is are was were be been am has have had do does did will would can could should may must
sit sits sat sitting see sees saw look looks eat eats ate drink drinks run runs ran walk walks walked
sleep sleeps slept play plays played like likes love loves want wants go goes went come comes came
read reads write writes speak speaks know knows think thinks give gives take takes make makes find finds
chase chases chased jump jumps jumped open opens close closes live lives lives buy buys sing sings
cat cats dog dogs mouse bird birds fish horse cow house car tree trees book books table chair mat bed
door window garden street city school teacher student child children man woman boy girl friend mother
father sister brother family day night morning evening week year time water bread apple milk coffee tea
black white red blue green yellow small big little old new young good bad happy sad tall short fast slow
hot cold nice beautiful long
on in under over near with without to from of for at by and or but not very too also here there now today
one two three four five
""".split()

FRENCH = """
le la les un une des ce cette ces mon ma mes ton ta son sa ses notre votre leur
je tu il elle nous vous ils elles qui que quoi où quand pourquoi comment
est sont était étaient être ai as a avons avez ont fait peut veut va vont
assis assise voit voient regarde mange mangent boit dort joue aime aiment cherche lit écrit parle sait
pense donne prend trouve chasse saute ouvre ferme vit achète chante marche court vient
chat chats chien chiens souris oiseau oiseaux poisson cheval vache maison voiture arbre arbres livre
livres tapis chaise lit porte fenêtre jardin rue ville école professeur élève enfant enfants homme femme
garçon fille ami mère père sœur frère famille jour nuit matin soir semaine année temps eau pain pomme
lait café thé
noir noire blanc blanche rouge bleu vert jaune petit petite grand grande vieux nouveau jeune bon bonne
mauvais heureux triste rapide lent chaud froid beau belle
sur dans sous avec sans à de pour par et ou mais ne pas très aussi ici là maintenant aujourd hui
deux trois quatre cinq
""".split()

PUNCTUATION = [".", ",", "?", "!", "'"]


def word_list() -> list[str]:
    """Every word once, in a fixed order (English, then French, then punctuation)."""
    seen: dict[str, None] = {}
    for w in ENGLISH + FRENCH + PUNCTUATION:
        seen.setdefault(w, None)
    return list(seen)


def default_tokenizer() -> WordTokenizer:
    """A word tokenizer over the built-in English + French word list."""
    return WordTokenizer(list(SPECIALS) + word_list())
