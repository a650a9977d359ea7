// Reference phonemizer for Mixdown's Piper voices: upstream piper-phonemize's own functions
// (phonemize_eSpeak, phonemes_to_ids) over its own espeak-ng fork, behind a JSON-lines pipe.
// Built by build.sh from the fetched upstream sources; nothing upstream is copied here.
//
//   harness --espeak-data DIR [--config VOICE.onnx.json] < lines
// Each input line: {"text": "...", "voice": "en-us"}. Each output line:
//   {"phonemes": [[codepoint, ...] per sentence], "ids": [[id, ...] per sentence]}
// or {"error": "..."} where upstream throws (a voice espeak-ng lacks).
// with the ids from the config's phoneme_id_map (upstream's default map without --config), as the
// piper binary makes them (src/cpp/piper.cpp: one phonemes_to_ids call per sentence).
//   harness --default-id-map  prints upstream's DEFAULT_PHONEME_ID_MAP as a JSON object.
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <espeak-ng/speak_lib.h>

#include "json.hpp"
#include "phoneme_ids.hpp"
#include "phonemize.hpp"
#include "uni_algo.h"

using json = nlohmann::json;

static std::string utf8(piper::Phoneme p) {
  return una::utf32to8<char32_t, char>(std::u32string_view(&p, 1));
}

int main(int argc, char *argv[]) {
  std::string dataDir;
  std::string configPath;
  for (int i = 1; i < argc; i++) {
    std::string arg = argv[i];
    if (arg == "--espeak-data" && i + 1 < argc) {
      dataDir = argv[++i];
    } else if (arg == "--config" && i + 1 < argc) {
      configPath = argv[++i];
    } else if (arg == "--default-id-map") {
      json map = json::object();
      for (auto &[phoneme, ids] : piper::DEFAULT_PHONEME_ID_MAP) map[utf8(phoneme)] = ids;
      std::cout << map.dump() << std::endl;
      return 0;
    } else {
      std::cerr << "unknown argument " << arg << std::endl;
      return 2;
    }
  }
  if (espeak_Initialize(AUDIO_OUTPUT_SYNCHRONOUS, 0, dataDir.c_str(), 0) < 0) {
    std::cerr << "espeak_Initialize failed" << std::endl;
    return 1;
  }

  piper::PhonemeIdConfig idConfig;
  if (!configPath.empty()) {
    std::ifstream file(configPath);
    json config = json::parse(file);
    auto map = std::make_shared<piper::PhonemeIdMap>();
    for (auto &[key, value] : config["phoneme_id_map"].items()) {
      auto phonemes = una::utf8to32<char, char32_t>(std::string_view(key));
      if (phonemes.size() != 1) continue;
      (*map)[phonemes[0]] = value.get<std::vector<piper::PhonemeId>>();
    }
    idConfig.phonemeIdMap = map;
  }

  std::string line;
  while (std::getline(std::cin, line)) {
    json input = json::parse(line);
    piper::eSpeakPhonemeConfig eSpeakConfig;
    eSpeakConfig.voice = input.value("voice", "en-us");
    std::vector<std::vector<piper::Phoneme>> sentences;
    try {
      piper::phonemize_eSpeak(input["text"].get<std::string>(), eSpeakConfig, sentences);
    } catch (const std::exception &e) {
      std::cout << json{{"error", e.what()}}.dump() << std::endl;
      continue;
    }
    json out = {{"phonemes", json::array()}, {"ids", json::array()}};
    std::map<piper::Phoneme, std::size_t> missing;
    for (auto &sentence : sentences) {
      json codepoints = json::array();
      for (auto p : sentence) codepoints.push_back((uint32_t)p);
      out["phonemes"].push_back(codepoints);
      std::vector<piper::PhonemeId> ids;
      piper::phonemes_to_ids(sentence, idConfig, ids, missing);
      out["ids"].push_back(ids);
    }
    std::cout << out.dump() << std::endl;
  }
  return 0;
}
