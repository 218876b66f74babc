#!/usr/bin/env bash
# Writes the garden grammar data/garden.yaml (the default garden world, v3) from a seed.
#   scripts/dev/make_garden.sh [SEED] > data/garden.yaml
# v3 (issue 30): a sentence holds one to three clauses joined by ", and", each with its own
# subject, and each clause's subject has a gender other than the clause before it; a possessive
# pronoun agrees with the NEAREST preceding subject of its sentence, so finding the antecedent
# is a matter of recency, not of a syntactic slot. CLAUSE2 / CLAUSE3 (default 0.45 / 0.30) are
# the chances of a second and a third clause, SENTENCES (default "0.10 0.30 0.30") those of a
# second, third and fourth sentence; the defaults are the calibration of docs/results_notes.md.
# The drawn weights are the same draws as v2 (data/garden_v2.yaml, the one-clause world:
# CLAUSE2=0 SENTENCES="0.40 0.45 0.40" writes it again, up to its header).
# The language is context-free in its frame (sentences, openers, relative clauses, places),
# but the content is not: each subject noun has its own distribution over the verbs, and each
# (subject, verb) pair its own distribution over the verb's objects, drawn once here from
# symmetric Dirichlet distributions (verbs: alpha 0.2, objects: alpha 0.4; a small alpha =
# a few verbs or objects take most of the mass, the rest are rare). A model must learn ~100 such distributions from the training
# split; the test split then holds combinations training showed rarely or never: that
# gap between a trained model and the truth is what the lecture's world had.
# The drawn weights are data: the committed data/garden.yaml is the world, and this script
# says how it was made (mawk's and gawk's rand() differ, so rerun only to make a new world).
set -euo pipefail
seed="${1:-20261130}"
verb_alpha="${VERB_ALPHA:-0.2}" object_alpha="${OBJECT_ALPHA:-0.4}"
clause2="${CLAUSE2:-0.45}" clause3="${CLAUSE3:-0.30}" more="${SENTENCES:-0.10 0.30 0.30}"
awk -v seed="$seed" -v verb_alpha="$verb_alpha" -v object_alpha="$object_alpha" \
    -v clause2="$clause2" -v clause3="$clause3" -v more="$more" '
function gauss(   u, v) { u = rand(); v = rand(); if (u < 1e-12) u = 1e-12; return sqrt(-2 * log(u)) * cos(6.283185307179586 * v) }
# Marsaglia-Tsang gamma(a, 1); a < 1 through gamma(a + 1) * U^(1/a).
function gamma(a,   d, c, x, v, u) {
  if (a < 1) { u = rand(); if (u < 1e-12) u = 1e-12; return gamma(a + 1) * exp(log(u) / a) }
  d = a - 1 / 3; c = 1 / sqrt(9 * d)
  while (1) {
    do { x = gauss(); v = 1 + c * x } while (v <= 0)
    v = v * v * v; u = rand()
    if (u < 1 - 0.0331 * x * x * x * x) return d * v
    if (log(u) < 0.5 * x * x + d * (1 - v + log(v))) return d * v
  }
}
# Fills w[1..n] with a Dirichlet(alpha) draw, rounded to 3 decimals (at least 0.001).
function dirichlet(n, alpha, w,   i, s) {
  s = 0; for (i = 1; i <= n; i++) { w[i] = gamma(alpha); s += w[i] }
  for (i = 1; i <= n; i++) { w[i] = w[i] / s; if (w[i] < 0.001) w[i] = 0.001; w[i] = sprintf("%.3f", w[i]) }
}
function cap(s) { return toupper(substr(s, 1, 1)) substr(s, 2) }
BEGIN {
  srand(seed)
  nsub = split("gardener boy farmer grandpa girl woman grandma lady cat dog bird rabbit", subj, " ")
  split("3 2 1 1 3 2 1 1 2 2 1.5 1", subw, " ")
  split("he he he he she she she she it it it it", subg, " ")
  split("pond fence gate shed tree house", place, " ")
  nverb = split("waters plants picks eats carries washes hides finds feeds chases sings waits sleeps runs plays", verb, " ")
  split("plant plant fruit food thing thing thing thing animal animal - - - - -", vclass, " ")
  nobj["plant"] = split("rose tulip lily bean daisy", objs_plant, " ")
  nobj["fruit"] = split("apple pear plum carrot berry", objs_fruit, " ")
  nobj["food"] = split("seed worm bone cake corn", objs_food, " ")
  nobj["thing"] = split("basket bucket hat pot ball stick", objs_thing, " ")
  nobj["animal"] = split("kitten puppy duck hen mouse frog", objs_animal, " ")
  for (i = 1; i <= nobj["plant"]; i++) obj["plant", i] = objs_plant[i]
  for (i = 1; i <= nobj["fruit"]; i++) obj["fruit", i] = objs_fruit[i]
  for (i = 1; i <= nobj["food"]; i++) obj["food", i] = objs_food[i]
  for (i = 1; i <= nobj["thing"]; i++) obj["thing", i] = objs_thing[i]
  for (i = 1; i <= nobj["animal"]; i++) obj["animal", i] = objs_animal[i]

  split(more, mp, " ")
  v3 = clause2 > 0
  print "# The garden world: the toy language every lmx experiment trains on (see GARDEN.md)."
  print "# Written by scripts/dev/make_garden.sh " seed (v3 ? " (v3: CLAUSE2=" clause2 " CLAUSE3=" clause3 ", SENTENCES=\"" more "\")" : "")
  print "# (per-subject verb and per-(subject, verb) object weights are Dirichlet draws: the data of"
  print "# this world). Earlier worlds: data/garden_v2.yaml (one clause per sentence: the antecedent"
  print "# is always the main clause'"'"'s subject) and data/garden_v1.yaml (context-free)."
  print "#"
  print "# A probabilistic grammar without recursion. Each rule lists its choices as"
  print "#   \"<weight> <symbol> <symbol> ...\"      (weights are normalized per rule; no symbols = empty)"
  print "# where a symbol is"
  print "#   Capitalized   another rule (rules may not refer back to themselves, directly or not)"
  print "#   lowercase     a word of the vocabulary (also punctuation such as \".\")"
  print "#   $slot         an agreement slot: emits the slot'"'"'s form for the gender bound last"
  print "#   @gender       (at the end of a choice) binds that gender to the choice'"'"'s first word:"
  print "#                 this is how a sentence'"'"'s subject decides its possessive pronoun"
  print "# The grammar must be unambiguous: at every point, each possible next word comes from"
  print "# exactly one choice, so the words so far determine the state and p(word | prefix) is exact."
  print "# lmx checks this on every step it walks. A document is <bos>, the words of `start`, <eos>."
  print "#"
  print "# The pronoun task: the subject is not always the first noun (an opener may name another"
  print "# person or animal), other nouns of any gender stand between the subject and its pronoun"
  print "# (relative clauses, places, a second verb phrase), and every subject can do every verb,"
  print "# so \"its\" is not implied by the verb: only the subject decides."
  if (v3) {
    print "# A sentence holds one to three clauses joined by \", and\", each with its own subject of a"
    print "# gender other than the previous clause'"'"'s: a pronoun agrees with the NEAREST preceding"
    print "# subject of its sentence (\"the boy sees the hen , and the girl washes her ball\")."
  }
  print "start: Doc"
  print ""
  print "slots:"
  print "  poss: {he: his, she: her, it: its}"
  print ""
  print "rules:"
  print "  # 1 to 4 sentences."
  print "  Doc:\n    - 1 Sentence More1"
  printf "  More1:\n    - %.2f\n    - %.2f Sentence More2\n", 1 - mp[1], mp[1]
  printf "  More2:\n    - %.2f\n    - %.2f Sentence More3\n", 1 - mp[2], mp[2]
  printf "  More3:\n    - %.2f\n    - %.2f Sentence\n", 1 - mp[3], mp[3]
  print ""
  print "  Sentence:\n    - 1 Opener the AdjOpt Subject ."
  print "  # Openers: some name a person or animal that is NOT the subject."
  print "  Opener:\n    - 0.45\n    - 0.05 today ,\n    - 0.05 later ,\n    - 0.10 Prep the Place ,\n    - 0.35 when the AdjOpt Other Does ,"
  print ""
  print "  # The subject binds the gender; what follows it sets the distance to the pronoun."
  print "  Subject:"
  for (s = 1; s <= nsub; s++) printf "    - %s %s %sPost %sPart%s @%s\n", subw[s], subj[s], cap(subj[s]), cap(subj[s]), v3 ? " " cap(subg[s]) "Next1" : "", subg[s]
  if (v3) {
    print "  # Clauses 2 and 3: a subject of another gender than the clause before (no recursion:"
    print "  # one rule per clause and gender)."
    ng = split("he she it", gs, " ")
    for (g = 1; g <= ng; g++) {
      G = cap(gs[g])
      printf "  %sNext1:\n    - %.2f\n    - %.2f , and the AdjOpt Not%s2\n", G, 1 - clause2, clause2, G
      printf "  %sNext2:\n    - %.2f\n    - %.2f , and the AdjOpt Not%s3\n", G, 1 - clause3, clause3, G
      for (level = 2; level <= 3; level++) {
        printf "  Not%s%d:\n", G, level
        for (s = 1; s <= nsub; s++) {
          if (subg[s] == gs[g]) continue
          printf "    - %s %s %sPost %sPart%s @%s\n", subw[s], subj[s], cap(subj[s]), cap(subj[s]), level == 2 ? " " cap(subg[s]) "Next2" : "", subg[s]
        }
      }
    }
  }
  print "  # \"that the boy sees (near the pond)\" or \"that sees the boy\": another noun, which does not bind."
  print "  Other:"
  for (s = 1; s <= nsub; s++) printf "    - 1 %s\n", subj[s]
  print "  OtherFrom:\n    - 0.8\n    - 0.2 from the Place"
  print "  Watches:\n    - 1 sees\n    - 1 likes\n    - 1 helps"
  print "  Does:\n    - 1 sings\n    - 1 waits\n    - 1 sleeps\n    - 1 runs\n    - 1 plays"
  print ""
  print "  # Each subject: its verb phrase, its own verb weights, its own objects per verb."
  for (s = 1; s <= nsub; s++) {
    S = cap(subj[s])
    # What follows the subject: a relative clause naming another noun (its own choice of whom
    # it watches), a place, or an interjected "when" clause with another noun; a pronoun in the
    # place of the relative clause still agrees with the subject ("the girl that the boy sees near her pond").
    printf "  %sPost:\n    - 0.25\n    - 0.10 from the Place\n    - 0.45 that %sRel\n    - 0.20 , when the AdjOpt Other Does ,\n", S, S
    printf "  %sRel:\n    - 0.65 the AdjOpt %sOther OtherFrom Watches PlaceOpt\n    - 0.35 Watches the AdjOpt %sOther\n", S, S, S
    dirichlet(nsub, 0.3, xw)
    printf "  %sOther:\n", S
    for (o = 1; o <= nsub; o++) printf "    - %s %s\n", xw[o], subj[o]
    dirichlet(6, 0.5, pw)
    printf "  %sPlace:\n", S
    for (o = 1; o <= 6; o++) printf "    - %s %s\n", pw[o], place[o]
    printf "  %sPlaceOpt:\n    - 0.75\n    - 0.25 Prep PlaceDet %sPlace\n", S, S
    printf "  %sPart:\n    - 1 AdverbOpt %sAct %sPlaceOpt %sMore\n", S, S, S, S
    printf "  %sMore:\n    - 0.55\n    - 0.45 and AdverbOpt %sAct %sPlaceOpt %sMore2\n", S, S, S, S
    printf "  %sMore2:\n    - 0.65\n    - 0.35 and then %sAct\n", S, S
    dirichlet(nverb, verb_alpha, vw)
    printf "  %sAct:\n", S
    for (v = 1; v <= nverb; v++) {
      if (vclass[v] == "-") printf "    - %s %s\n", vw[v], verb[v]
      else printf "    - %s %s Det AdjOpt %s%s\n", vw[v], verb[v], S, cap(verb[v])
    }
    for (v = 1; v <= nverb; v++) {
      if (vclass[v] == "-") continue
      c = vclass[v]; n = nobj[c]
      dirichlet(n, object_alpha, ow)
      printf "  %s%s:\n", S, cap(verb[v])
      for (o = 1; o <= n; o++) printf "    - %s %s\n", ow[o], obj[c, o]
    }
  }
  print ""
  print "  AdverbOpt:\n    - 0.92\n    - 0.02 often\n    - 0.02 always\n    - 0.02 slowly\n    - 0.02 never"
  print "  Det:\n    - 0.40 the\n    - 0.07 a\n    - 0.53 $poss"
  print "  PlaceOpt:\n    - 0.75\n    - 0.25 Prep PlaceDet Place"
  print "  PlaceDet:\n    - 0.6 the\n    - 0.4 $poss"
  print "  AdjOpt:\n    - 0.90\n    - 0.10 Adjective"
  print "  Adjective:\n    - 2 little\n    - 2 old\n    - 2 happy\n    - 1 big\n    - 1 red\n    - 1 green\n    - 1 sleepy\n    - 1 young"
  print "  Place:\n    - 3 pond\n    - 2 fence\n    - 1 gate\n    - 1 shed\n    - 2 tree\n    - 2 house"
  print "  Prep:\n    - 4 near\n    - 2 under\n    - 1 behind\n    - 2 in"
}'
