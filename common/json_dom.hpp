// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The read-only JSON document json_check::parse() builds: every value of a text in one flat
// array, in document order, and every string inside one copy of the text.
//
// Why not nlohmann-json's DOM: it gives each object member a std::map node and each long string
// an allocation of its own, and then frees them all. Reading a 300-byte join reply cost 1.8 us,
// most of a client's share of a join (mcastd-bench-json). Here a document is two allocations
// (more only when its values outgrow a first guess), and a value is found by walking its
// siblings, which for the dozen keys of our objects is faster than a tree. Writing JSON is
// JsonWriter's job; nothing here builds or changes one.
//
// Layout: a container is followed by its members, each followed by its own members (pre-order).
// A value knows how many array slots it and everything inside it take (`span`), so its next
// sibling is `this + span`. Strings are views into the document's copy of the text, unescaped
// in place (an escape is never shorter than what it stands for).
#pragma once

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <string_view>
#include <utility>
#include <vector>

namespace mcastd::json_check {

class Value {
public:
    enum class Type : std::uint8_t {
        null,
        boolean,
        integer,
        unsigned_integer,
        floating,
        string,
        array,
        object,
    };

    Type type() const { return type_; }
    bool is_null() const { return type_ == Type::null; }
    bool is_boolean() const { return type_ == Type::boolean; }
    // As nlohmann-json: non-negative integers are unsigned, negative ones signed, and an integer
    // that fits neither (or has a fraction or exponent) is a double.
    bool is_number_integer() const { return type_ == Type::integer || type_ == Type::unsigned_integer; }
    bool is_number_unsigned() const { return type_ == Type::unsigned_integer; }
    bool is_number_float() const { return type_ == Type::floating; }
    bool is_number() const { return is_number_integer() || is_number_float(); }
    bool is_string() const { return type_ == Type::string; }
    bool is_array() const { return type_ == Type::array; }
    bool is_object() const { return type_ == Type::object; }

    // Each reads its own type only; the caller has checked it.
    bool boolean() const { return scalar_.b; }
    std::int64_t integer() const { return scalar_.i; }
    std::uint64_t unsigned_integer() const { return scalar_.u; }
    // Any number, converted.
    double number() const {
        return type_ == Type::floating ? scalar_.d
               : type_ == Type::integer ? static_cast<double>(scalar_.i)
                                        : static_cast<double>(scalar_.u);
    }
    std::string_view string() const { return {text_, size_}; }

    // An object's member: its key. Empty for anything else.
    std::string_view key() const { return {key_, key_size_}; }
    // key() == k, the sizes first, then byte by byte: keys are short, and a memcmp call per
    // member compared was most of what finding a key cost.
    bool has_key(std::string_view k) const noexcept {
        if (key_size_ != k.size())
            return false;
        for (std::size_t i = 0; i < k.size(); ++i)
            if (key_[i] != k[i])
                return false;
        return true;
    }

    // ---- containers ----

    // Members (an object's, with key()) or elements (an array's); 0 for a scalar.
    std::size_t size() const { return is_array() || is_object() ? size_ : 0; }
    bool empty() const { return size() == 0; }

    class Iterator {
    public:
        using iterator_category = std::forward_iterator_tag;
        using value_type = Value;
        using difference_type = std::ptrdiff_t;
        using pointer = const Value *;
        using reference = const Value &;

        Iterator() = default;
        Iterator(const Value *at, const Value *end) : at_(at), end_(end) { skip_shadowed(); }
        reference operator*() const { return *at_; }
        pointer operator->() const { return at_; }
        Iterator &operator++() {
            at_ += at_->span_;
            skip_shadowed();
            return *this;
        }
        Iterator operator++(int) {
            Iterator old = *this;
            ++*this;
            return old;
        }
        bool operator==(const Iterator &o) const { return at_ == o.at_; }

    private:
        void skip_shadowed() {
            while (at_ != end_ && at_->shadowed_)
                at_ += at_->span_;
        }
        const Value *at_ = nullptr;
        const Value *end_ = nullptr; // the container's end: may be past the document's last value
    };
    // Children in document order; an object's member shadowed by a later one of the same key
    // is skipped (the last value wins, as in nlohmann-json).
    Iterator begin() const {
        return Iterator(is_array() || is_object() ? this + 1 : this + span_, this + span_);
    }
    Iterator end() const { return Iterator(this + span_, this + span_); }

    // An object's member with this key, or nullptr (also for anything not an object).
    const Value *find(std::string_view key) const {
        const Value *from = nullptr;
        return find_from(key, from);
    }
    // find(key), starting at `from` (a member of this object, its end, or nullptr for its first)
    // and wrapping around; `from` becomes the member after the one found. A reader that asks for
    // keys in the order they were written finds each at once.
    const Value *find_from(std::string_view key, const Value *&from) const {
        if (!is_object())
            return nullptr;
        const Value *start = from ? from : this + 1;
        auto search = [&](const Value *first, const Value *last) -> const Value * {
            for (Iterator it(first, last), end(last, last); it != end; ++it)
                if (it->has_key(key)) {
                    from = &*it + it->span_;
                    return &*it;
                }
            return nullptr;
        };
        if (const Value *v = search(start, this + span_))
            return v;
        return search(this + 1, start);
    }
    // An array's element i (i < size()), by walking: for the first few of a short array.
    const Value &at(std::size_t i) const {
        Iterator it = begin();
        while (i-- > 0)
            ++it;
        return *it;
    }

private:
    friend class Document;
    friend class DocumentBuilder;

    Type type_ = Type::null;
    bool shadowed_ = false;
    std::uint32_t key_size_ = 0;
    std::uint32_t span_ = 1; // this value and everything inside it
    std::uint32_t size_ = 0; // string: bytes; container: members not shadowed
    const char *key_ = nullptr;
    union {
        bool b;
        std::int64_t i;
        std::uint64_t u;
        double d;
    } scalar_{};
    const char *text_ = nullptr; // a string's bytes
};

// One parsed text: its values and its unescaped strings. Moving it keeps every Value& and
// string_view into it valid (both live on the heap); a copy has its own.
class Document {
public:
    Document() = default;
    Document(Document &&) noexcept = default;
    Document &operator=(Document &&) noexcept = default;
    Document(const Document &other);
    Document &operator=(const Document &other) {
        if (this != &other)
            *this = Document(other);
        return *this;
    }

    // null for a document that failed to parse, or was never parsed.
    const Value &root() const { return nodes_.empty() ? kNull : nodes_.front(); }

private:
    friend class DocumentBuilder;
    friend class OwnedValue;
    inline static const Value kNull{};
    std::vector<char> text_; // the text, strings unescaped in place
    std::vector<Value> nodes_;
};

// A value with the document it is in: what a client keeps of a reply, whose result it decodes
// only once it knows which request the reply answers.
class OwnedValue {
public:
    OwnedValue() = default;
    // `value` is inside `doc`.
    OwnedValue(Document doc, const Value &value)
        : doc_(std::move(doc)),
          index_(doc_.nodes_.empty() ? 0 : static_cast<std::size_t>(&value - doc_.nodes_.data())) {}

    const Value &get() const { return doc_.nodes_.empty() ? doc_.root() : doc_.nodes_[index_]; }

private:
    Document doc_;
    std::size_t index_ = 0; // of the value among the document's
};

} // namespace mcastd::json_check
