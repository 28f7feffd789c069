#pragma once
// One numbering for people: layers, heads, and a map's rows and columns are shown 1-based in every
// text a person reads
// (spin boxes, plot titles, grid headers, strips, tooltips, exported figures), while everything a
// program reads or writes keeps core's 0-based index (JSON, `kind:layer:head` arguments, lesson and
// session files, --layer/--head). Every such text goes through these functions, the one place
// that converts.

#include <attnlab/alignment.h>
#include <attnlab/attention_kind.h>

#include <QString>

namespace attnlab::ui {

int shownNumber(int index);     // a layer's, head's, row's or column's index as people count it: index + 1
int indexOfShown(int number);   // back: number - 1
QString shownText(int index);   // "3" for index 2
QString layerLabel(int layer);  // "layer 3"
QString headLabel(int head);    // "head 4"
// "layer 3, head 4"; with `heads` given, head == heads is the mean: "layer 3, mean over heads".
QString layerHeadLabel(int layer, int head, int heads = -1);
QString shortLayerHeadLabel(int layer, int head);  // "L3 H4" (strips, where room is short)
QString headRefLabel(const HeadRef& head);         // "cross L3 H4" (lists of heads)
// An alignment method as people read it ("layer 3, head 4"; its name, "head:2:3", is for files).
QString alignmentMethodLabel(const AlignmentMethod& method);

}  // namespace attnlab::ui
