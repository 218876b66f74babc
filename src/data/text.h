// The second dataset kind: plain text as bytes. A file (or every .txt file of a directory,
// in name order) is cut into documents of data.text_doc_len bytes, each <bos> bytes <eos>;
// documents go to val / test / train by a permutation drawn from data.seed. With
// data.tokenizer sentencepiece the cuts move back to UTF-8 character boundaries and each
// document's text is encoded by the model (data/tokenizer.h).
#pragma once
#include "data/corpus.h"

namespace lmx::data {

// The byte vocabulary: ids 0..255 are the bytes, then <pad>, <bos>, <eos>.
Vocab byte_vocab();

// The vocabulary of a text config (bytes, or the SentencePiece model's pieces); reads no text.
Vocab text_vocab(const DataConfig& cfg);

// Builds a text corpus (no truth). Throws InputError if data.text_path cannot be read or
// holds too little text for the three splits.
Corpus load_text_corpus(const DataConfig& cfg);

// The training split's documents as text (what `lmx data tokenizer` trains on).
std::vector<std::string> text_training_split(const DataConfig& cfg);

}  // namespace lmx::data
