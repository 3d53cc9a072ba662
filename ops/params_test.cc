// ParamSchema and the attribute parsers: what they accept, and that
// malformed attributes are refused naming the attribute and its text.

#include "rill/ops/params.h"

#include <cstdint>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace rill::ops {
namespace {

struct Demo {
  std::vector<int64_t> axes;
  int64_t axis = 0;
  bool keepdims = false;
};

ParamSchema DemoSchema() {
  return ParamSchema::For<Demo>()
      .Field("axes", &Demo::axes)
      .Field("axis", &Demo::axis)
      .Field("keepdims", &Demo::keepdims);
}

void ExpectRefused(const Attrs& attrs, std::initializer_list<std::string> needles) {
  absl::StatusOr<std::shared_ptr<const void>> p = DemoSchema().Parse("demo", attrs);
  ASSERT_FALSE(p.ok()) << "accepted " << attrs.size() << " attributes";
  EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument) << p.status();
  for (const std::string& n : needles) {
    EXPECT_NE(p.status().message().find(n), std::string::npos)
        << "want '" << n << "' in " << p.status();
  }
}

TEST(ParamsTest, IntTuplesInEveryAcceptedSpelling) {
  const struct {
    const char* text;
    std::vector<int64_t> want;
  } cases[] = {
      {"(1, 2)", {1, 2}}, {"[1,2]", {1, 2}}, {"1", {1}}, {"(4,)", {4}}, {"( 4 , )", {4}},
      {"()", {}},         {" ( ) ", {}},     {"[]", {}}, {"-3", {-3}},  {"(0, -1, 2)", {0, -1, 2}}};
  for (const auto& c : cases) {
    std::vector<int64_t> got = {99};
    ASSERT_TRUE(ParseParam(c.text, &got).ok()) << c.text;
    EXPECT_EQ(got, c.want) << c.text;
    EXPECT_TRUE(ParseParam(FormatIntTuple(c.want), &got).ok());
    EXPECT_EQ(got, c.want) << FormatIntTuple(c.want);
  }
}

// "(2,,3)" and "(,)" read as (2, 3) and () before: an empty element is an
// error, except the one after a 1-tuple's trailing comma.
TEST(ParamsTest, ATupleWithAnEmptyElementIsRefused) {
  const struct {
    const char* text;
    const char* want;
  } cases[] = {{"(2,,3)", "element 2 is empty"}, {"(,)", "element 1 is empty"},
               {"(,1)", "element 1 is empty"},   {"(1,,)", "element 2 is empty"},
               {",", "element 1 is empty"},      {"[1, ,2]", "element 2 is empty"}};
  for (const auto& c : cases) {
    std::vector<int64_t> got;
    absl::Status s = ParseParam(c.text, &got);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << c.text << ": " << s;
    EXPECT_NE(s.message().find(c.want), std::string::npos) << s;
    EXPECT_NE(s.message().find(std::string("'") + c.text + "'"), std::string::npos) << s;
  }
  ExpectRefused({{"axes", "(2,,3)"}}, {"op 'demo' attribute 'axes'", "'(2,,3)'", "empty"});
  ExpectRefused({{"axes", "(,)"}}, {"'axes'", "'(,)'", "element 1 is empty"});
}

// A key given twice used to be accepted, the last value winning.
TEST(ParamsTest, AnAttributeGivenTwiceIsRefused) {
  ExpectRefused({{"axis", "1"}, {"axis", "2"}},
                {"op 'demo' attribute 'axis' is given twice", "'1'", "'2'"});
  ExpectRefused({{"axes", "(0,)"}, {"keepdims", "1"}, {"axes", "(0,)"}},
                {"'axes' is given twice", "'(0,)' and '(0,)'"});
  absl::StatusOr<std::shared_ptr<const void>> p =
      DemoSchema().Parse("demo", {{"axes", "(1, 2)"}, {"axis", "-1"}, {"keepdims", "true"}});
  ASSERT_TRUE(p.ok()) << p.status();
  const Demo& d = *static_cast<const Demo*>(p->get());
  EXPECT_EQ(d.axes, (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(d.axis, -1);
  EXPECT_TRUE(d.keepdims);
}

TEST(ParamsTest, OtherMalformedAttributesNameTheAttributeAndText) {
  ExpectRefused({{"axis", "1.5"}}, {"'axis'", "'1.5' is not a valid int"});
  ExpectRefused({{"axes", "(1, x)"}}, {"'axes'", "'(1, x)'"});
  ExpectRefused({{"axes", "(1, 2"}}, {"'axes'", "'(1, 2'"});
  ExpectRefused({{"keepdims", "yes"}}, {"'keepdims'", "'yes'"});
  ExpectRefused({{"nope", "1"}}, {"no attribute 'nope'", "axes, axis, keepdims"});
}

}  // namespace
}  // namespace rill::ops
