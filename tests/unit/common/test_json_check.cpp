// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The strict JSON layer under the protocol and the config: duplicate keys with their pointer,
// depth bounds, syntax errors with positions, and getters that never convert silently.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/json_check.hpp"
#include "common/json_writer.hpp"
#include "json_dom_nlohmann.hpp"

namespace mcastd::json_check {
namespace {

using testing_json::to_nlohmann;

TEST(JsonCheck, FindsDuplicateKeysAtAnyDepthWithTheirPointer) {
    auto p = parse(R"({"a":{"b":[{"c":1},{"c":1,"c":2}]}})");
    ASSERT_FALSE(p.syntax_error);
    ASSERT_TRUE(p.duplicate);
    EXPECT_EQ(p.duplicate->pointer, "/a/b/1/c");
    EXPECT_EQ(p.duplicate->describe(), "/a/b/1/c: duplicate key");
    // The same key in sibling objects is not a duplicate.
    EXPECT_FALSE(parse(R"({"x":{"k":1},"y":{"k":1}})").duplicate);
    // Escaped per RFC 6901.
    EXPECT_EQ(parse(R"({"a/b":{"~":1,"~":1}})").duplicate->pointer, "/a~1b/~0");
    // A duplicated container replaces the first, as json::parse does; the rest is intact.
    auto dup_obj = parse(R"({"o":1,"o":{"k":[1]},"z":2})");
    EXPECT_EQ(to_nlohmann(dup_obj.value()), nlohmann::json::parse(R"({"o":{"k":[1]},"z":2})"));
    EXPECT_EQ(dup_obj.value().size(), 2u);
    ASSERT_TRUE(dup_obj.value().find("o"));
    EXPECT_TRUE(dup_obj.value().find("o")->is_object());
    // Many keys (past the parser's switch from a walk to an index), duplicates among them.
    std::string many = "{";
    for (int i = 0; i < 100; ++i)
        many += "\"k" + std::to_string(i) + "\":" + std::to_string(i) + ",";
    many += R"("k7":"again","k70":[],"k7":"last"})";
    auto dup_many = parse(many);
    ASSERT_TRUE(dup_many.duplicate);
    EXPECT_EQ(dup_many.duplicate->pointer, "/k7");
    EXPECT_EQ(to_nlohmann(dup_many.value()), nlohmann::json::parse(many));
    EXPECT_EQ(dup_many.value().size(), 100u);
    EXPECT_EQ(dup_many.value().find("k7")->string(), "last");
    EXPECT_TRUE(dup_many.value().find("k70")->is_array());
    EXPECT_EQ(dup_many.value().find("k99")->unsigned_integer(), 99u);
}

// A reader starts each look-up after the member it found last and wraps around: in any order,
// every key is found, a missing one is not, and a shadowed duplicate never is.
TEST(JsonCheck, ReaderFindsKeysInAnyOrder) {
    auto p = parse(R"({"a":1,"b":{"x":[1,{"y":2}]},"c":"s","d":[],"b":{"z":3},"e":null})");
    ASSERT_TRUE(p.duplicate);
    const Value &obj = p.value();
    const std::vector<std::string> keys{"a", "b", "c", "d", "e"};
    std::vector<std::vector<std::string>> orders{keys, {"e", "d", "c", "b", "a"}, {"c", "a", "e", "b", "d"}};
    for (auto &order : orders) {
        ObjectReader in(obj, "");
        for (int twice = 0; twice < 2; ++twice)
            for (const std::string &k : order) {
                SCOPED_TRACE(k);
                const Value *v = in.find(k);
                ASSERT_TRUE(v);
                EXPECT_EQ(v, obj.find(k));
                EXPECT_EQ(v->key(), k);
                EXPECT_FALSE(in.find("zz"));
                EXPECT_FALSE(in.find(""));
            }
        ASSERT_TRUE(in.find("b")->is_object());
        EXPECT_TRUE(in.find("b")->find("z")); // the last "b" wins
    }
    EXPECT_FALSE(ObjectReader(parse("{}").value(), "").find("a"));
}

TEST(JsonCheck, BuildsTheSameDomAsTheLibrary) {
    const char *text = R"({"s":"x\u00e9\n","n":-5,"u":18446744073709551615,"f":1.5e3,
        "b":false,"z":null,"a":[[],{},[1,[2]]],"o":{"p":{"q":"r"}}})";
    EXPECT_EQ(to_nlohmann(parse(text).value()), nlohmann::json::parse(text));
    EXPECT_EQ(to_nlohmann(parse("7").value()), 7);
    EXPECT_EQ(to_nlohmann(parse(" [1, 2] ").value()), nlohmann::json::parse("[1,2]"));
    // Strings are read in place: escapes shorten them, and what follows is unharmed.
    auto esc = parse(R"(["a\u00e9\ud83d\ude00\n\"b", "plain", {"k\t":"\/"}])");
    ASSERT_FALSE(esc.syntax_error);
    EXPECT_EQ(esc.value().at(0).string(), "a\xc3\xa9\xf0\x9f\x98\x80\n\"b");
    EXPECT_EQ(esc.value().at(1).string(), "plain");
    EXPECT_EQ(esc.value().at(2).begin()->key(), "k\t");
    EXPECT_EQ(esc.value().at(2).begin()->string(), "/");
    // A value outlives the move of its document.
    const Value *first = &esc.value().at(1);
    Document moved = std::move(esc.document);
    EXPECT_EQ(&moved.root().at(1), first);
    EXPECT_EQ(first->string(), "plain");
}

TEST(JsonCheck, SyntaxErrorsCarryThePositionWithoutTheLibraryPrefix) {
    auto p = parse("{\n  \"a\": 1,\n}");
    ASSERT_TRUE(p.syntax_error);
    EXPECT_TRUE(p.syntax_error->starts_with("line 3, column 1: syntax error")) << *p.syntax_error;
    EXPECT_TRUE(p.value().is_null());
    EXPECT_TRUE(parse("").syntax_error);
    EXPECT_TRUE(parse("{} {}").syntax_error);
    // The library's lexer would stop at a NUL and accept what came before it.
    auto nul = parse(std::string_view("{}\0{}", 5));
    ASSERT_TRUE(nul.syntax_error);
    EXPECT_EQ(*nul.syntax_error, "NUL byte at offset 2");
}

TEST(JsonCheck, SyntaxErrorsQuoteTheInputAsPrintableUtf8) {
    // The unexpected byte is quoted, and a byte that is not UTF-8 becomes U+FFFD.
    auto p = parse("{\"a\"\xca\n: 1}");
    ASSERT_TRUE(p.syntax_error);
    EXPECT_EQ(*p.syntax_error, "line 1, column 5: syntax error while parsing object separator - "
                               "unexpected '\xEF\xBF\xBD'; expected ':'");
    auto ctl = parse("[\"a\x01\"]");
    ASSERT_TRUE(ctl.syntax_error);
    EXPECT_EQ(ctl.syntax_error->find('\x01'), std::string::npos) << *ctl.syntax_error;
    // A long bad token is cut.
    auto long_token = parse("[\"" + std::string(5000, 'x') + "\\q\"]");
    ASSERT_TRUE(long_token.syntax_error);
    EXPECT_LT(long_token.syntax_error->size(), 300u);
}

TEST(JsonCheck, CommentsOnlyWhenAsked) {
    const char *text = "// head\n{ /* a */ \"a\": 1 // tail\n}";
    EXPECT_TRUE(parse(text).syntax_error);
    auto p = parse(text, ParseOptions{.comments = true});
    ASSERT_FALSE(p.syntax_error) << *p.syntax_error;
    EXPECT_EQ(p.value().find("a")->unsigned_integer(), 1u);
}

TEST(JsonCheck, BoundsTheDepth) {
    EXPECT_FALSE(parse(std::string(32, '[') + std::string(32, ']')).syntax_error);
    auto deep = parse(std::string(33, '[') + std::string(33, ']'));
    ASSERT_TRUE(deep.syntax_error);
    EXPECT_NE(deep.syntax_error->find("nested deeper than 32 levels"), std::string::npos);
    // A depth far beyond the stack's is refused early, not built.
    EXPECT_TRUE(parse(std::string(1'000'000, '[')).syntax_error);
    EXPECT_TRUE(parse(R"({"a":{"b":1}})", ParseOptions{.max_depth = 1}).syntax_error);
}

TEST(JsonCheck, IntegersAreNeverConvertedSilently) {
    const Parsed doc = parse(R"({"f":3.7,"big":300,"neg":-1,"b":true,"s":"1","max":
        18446744073709551615,"i":5})");
    const ObjectReader r(doc.value(), "/x");
    auto fails = [&](auto f, const std::string &says) {
        try {
            f();
            ADD_FAILURE() << "no error, wanted " << says;
        } catch (const FieldError &e) {
            EXPECT_EQ(e.describe(), says);
        }
    };
    fails([&] { r.uint("f", 0, 10); }, "/x/f: expected an integer in [0, 10], got 3.7");
    fails([&] { r.uint("big", 0, 255); }, "/x/big: 300 out of range [0, 255]");
    fails([&] { r.uint("neg", 0, 10); }, "/x/neg: -1 out of range [0, 10]");
    fails([&] { r.uint("b", 0, 10); }, "/x/b: expected an integer in [0, 10], got true");
    fails([&] { r.uint("s", 0, 10); }, "/x/s: expected an integer in [0, 10], got \"1\"");
    fails([&] { r.uint("i", 6, 10); }, "/x/i: 5 out of range [6, 10]");
    fails([&] { r.required_uint("nope", 0, 1); }, "/x/nope: required key is missing");
    fails([&] { r.sint("max", -5, 5); }, "/x/max: 18446744073709551615 out of range [-5, 5]");
    fails([&] { r.sint("neg", 0, 5); }, "/x/neg: -1 out of range [0, 5]");
    fails([&] { r.string("i"); }, "/x/i: expected a string, got 5");
    fails([&] { r.boolean("s"); }, "/x/s: expected true or false, got \"1\"");
    fails([&] { r.array("i"); }, "/x/i: expected an array, got 5");
    fails([&] { r.object("i"); }, "/x/i: expected an object, got 5");
    fails([&] { r.number("b"); }, "/x/b: expected a number, got true");
    fails([&] { r.require_only({"f", "big", "neg", "b", "s", "max"}); }, "/x/i: unknown key");
    fails([&] { ObjectReader(*doc.value().find("i"), "/x/i"); }, "/x/i: expected an object, got 5");
    EXPECT_EQ(r.uint("max", 0, UINT64_MAX), UINT64_MAX);
    EXPECT_EQ(r.sint("neg", -1, 0), -1);
    EXPECT_EQ(r.sint("i", -10, 10), 5);
    EXPECT_EQ(r.number("f"), 3.7);
    EXPECT_EQ(r.number("i"), 5.0);
    // No value is infinite: the parser refuses 1e400 ("number overflow").
    EXPECT_TRUE(parse(R"({"h":1e400})").syntax_error);
    EXPECT_FALSE(r.uint("absent", 0, 1));
    EXPECT_NO_THROW(r.require_only({"f", "big", "neg", "b", "s"},
                                   std::array<std::string_view, 2>{"max", "i"}));
}

TEST(JsonCheck, DescribesValuesShortly) {
    const Parsed doc = parse(R"([{}, [], null, "a\"b", true, -3, 18446744073709551615, 2.5, 1.0])");
    const std::vector<std::string> said = {"an object", "an array", "null", R"("a\"b")", "true",
                                           "-3", "18446744073709551615", "2.5", "1.0"};
    ASSERT_EQ(doc.value().size(), said.size());
    for (std::size_t i = 0; i < said.size(); ++i)
        EXPECT_EQ(describe_value(doc.value().at(i)), said[i]);
    EXPECT_EQ(describe_string("a\"b"), R"("a\"b")");
    // Long strings are cut, never inside a UTF-8 sequence.
    const std::string long_text = std::string(39, 'x') + "\xc3\xa9" + std::string(50, 'y');
    EXPECT_EQ(describe_string(long_text), "\"" + std::string(39, 'x') + "\"...");
    EXPECT_EQ(pointer_to("", "a/b~"), "/a~1b~0");
    EXPECT_EQ(pointer_to("/p", 3), "/p/3");
}

} // namespace
} // namespace mcastd::json_check

namespace mcastd::proto {
namespace {

std::string write(auto f) {
    std::string out;
    JsonWriter w(out);
    f(w);
    return out;
}

TEST(JsonWriter, WritesNestedContainersWithCommasInTheRightPlaces) {
    auto text = write([](JsonWriter &w) {
        w.begin_object();
        w.member("a", std::uint64_t{1});
        w.key("b");
        w.begin_array();
        w.begin_object();
        w.end_object();
        w.begin_array();
        w.end_array();
        w.value(true);
        w.null();
        w.end_array();
        w.member("c", std::int64_t{-2});
        w.member("d", 2.5);
        w.member("e", "s");
        w.end_object();
    });
    EXPECT_EQ(text, R"({"a":1,"b":[{},[],true,null],"c":-2,"d":2.5,"e":"s"})");
}

TEST(JsonWriter, EscapesWhatJsonRequires) {
    std::string out;
    append_json_string(out, std::string("q\"b\\n\n\r\t\b\f\x01\x1f\x7f/", 14));
    EXPECT_EQ(out, R"("q\"b\\n\n\r\t\b\f\u0001\u001f)"
                   "\x7f"
                   R"(/")");
    EXPECT_EQ(nlohmann::json::parse(out).get<std::string>(),
              std::string("q\"b\\n\n\r\t\b\f\x01\x1f\x7f/", 14));
}

TEST(JsonWriter, EveryAsciiByteInPlainTextReadsBackAsItself) {
    // Plain text is copied whole; one byte that needs an escape sends it the long way.
    for (int c = 0; c < 0x80; ++c) {
        const std::string in = std::string("mgid") + static_cast<char>(c) + "ff12::1";
        std::string out;
        append_json_string(out, in);
        EXPECT_EQ(nlohmann::json::parse(out).get<std::string>(), in) << c;
        if (c >= 0x20 && c != '"' && c != '\\') {
            EXPECT_EQ(out, "\"" + in + "\"") << c;
        }
    }
}

TEST(JsonWriter, KeepsValidUtf8AndReplacesInvalidBytes) {
    const std::string valid = "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\xef\xbf\xbf";
    std::string out;
    append_json_string(out, valid);
    EXPECT_EQ(out, "\"" + valid + "\"");
    const std::string replacement = "\xEF\xBF\xBD";
    struct Case {
        std::string in, out;
    } cases[] = {
        {"\xff", replacement},
        {"\xc3", replacement},                                 // truncated sequence
        {"\xc0\xaf", replacement + replacement},               // overlong '/'
        {"\xe0\x80\xaf", replacement + replacement + replacement}, // overlong
        {"\xed\xa0\x80", replacement + replacement + replacement}, // UTF-16 surrogate
        {"\xf4\x90\x80\x80", replacement + replacement + replacement + replacement}, // >U+10FFFF
        {"a\x80z", "a" + replacement + "z"},
    };
    for (const auto &c : cases) {
        std::string o;
        append_json_string(o, c.in);
        EXPECT_EQ(o, "\"" + c.out + "\"");
        EXPECT_TRUE(nlohmann::json::accept(o));
    }
}

TEST(JsonWriter, NumbersAreJsonNumbers) {
    auto num = [](double d) { return write([&](JsonWriter &w) { w.value(d); }); };
    EXPECT_EQ(num(100.0), "100");
    EXPECT_EQ(num(2.5), "2.5");
    EXPECT_EQ(num(0.1), "0.1");
    EXPECT_EQ(num(1e300), "1e+300");
    EXPECT_EQ(num(-0.0), "0");
    EXPECT_EQ(num(std::numeric_limits<double>::infinity()), "null");
    EXPECT_EQ(num(std::nan("")), "null");
    EXPECT_EQ(write([](JsonWriter &w) { w.value(UINT64_MAX); }), "18446744073709551615");
    EXPECT_EQ(write([](JsonWriter &w) { w.value(INT64_MIN); }), "-9223372036854775808");
}

} // namespace
} // namespace mcastd::proto
